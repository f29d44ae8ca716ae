#include "engine/tokenizer/lra_vocabulary.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/tokenizer/utf8.h"

namespace hgeval {
namespace {

absl::StatusOr<int64_t> IntField(const nlohmann::json& json, const char* key, int64_t fallback,
                                 const std::string& name) {
  if (!json.contains(key) || json[key].is_null()) return fallback;
  if (!json[key].is_number_integer()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": '", key, "' must be an integer"));
  }
  return json[key].get<int64_t>();
}

}  // namespace

std::vector<std::string_view> ListOpsTokens(std::string_view source) {
  std::vector<std::string_view> tokens;
  size_t pos = 0;
  while (pos < source.size()) {
    while (pos < source.size() && absl::ascii_isspace(static_cast<unsigned char>(source[pos]))) {
      ++pos;
    }
    size_t end = pos;
    while (end < source.size() && !absl::ascii_isspace(static_cast<unsigned char>(source[end]))) {
      ++end;
    }
    // Parentheses are deleted, not split on: "(" alone vanishes, "(3" would be "3".
    std::string_view word = source.substr(pos, end - pos);
    size_t first = word.find_first_not_of("()");
    if (first != std::string_view::npos) {
      size_t last = word.find_last_not_of("()");
      std::string_view inner = word.substr(first, last - first + 1);
      if (inner.find_first_of("()") == std::string_view::npos) tokens.push_back(inner);
    }
    pos = end;
  }
  return tokens;
}

absl::StatusOr<LraVocabulary> LraVocabulary::FromJson(const nlohmann::json& json,
                                                      const std::string& name) {
  if (!json.is_object()) return absl::InvalidArgumentError(name + ": not a JSON object");
  LraVocabulary vocab;
  const std::string kind = json.value("kind", std::string());
  if (kind == "listops") {
    vocab.kind_ = Kind::kListOps;
  } else if (kind == "bytes") {
    vocab.kind_ = Kind::kBytes;
  } else if (kind == "chars") {
    vocab.kind_ = Kind::kChars;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": 'kind' must be \"listops\", \"bytes\" or \"chars\", got '", kind, "'"));
  }
  if (json.contains("tokens")) {
    if (!json["tokens"].is_array()) {
      return absl::InvalidArgumentError(name + ": 'tokens' must be a list of strings");
    }
    for (const nlohmann::json& token : json["tokens"]) {
      if (!token.is_string()) {
        return absl::InvalidArgumentError(name + ": 'tokens' must be a list of strings");
      }
      if (!vocab.ids_.emplace(token.get<std::string>(), static_cast<int32_t>(vocab.size_)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": token '", token.get<std::string>(), "' listed twice"));
      }
      ++vocab.size_;
    }
  } else if (vocab.kind_ != Kind::kBytes) {
    return absl::InvalidArgumentError(name + ": 'tokens' is required for kind " + kind);
  }
  absl::StatusOr<int64_t> pad = IntField(json, "pad_id", 0, name);
  absl::StatusOr<int64_t> unk = IntField(json, "unk_id", -1, name);
  absl::StatusOr<int64_t> eos = IntField(json, "eos_id", -1, name);
  absl::StatusOr<int64_t> offset = IntField(json, "byte_offset", 0, name);
  absl::StatusOr<int64_t> max_length = IntField(json, "max_length", 0, name);
  for (const auto* s : {&pad, &unk, &eos, &offset, &max_length}) {
    if (!s->ok()) return s->status();
  }
  if (vocab.kind_ == Kind::kBytes) {
    if (*offset < 0 || *offset > 1 << 20) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": byte_offset out of range"));
    }
    vocab.size_ = std::max<int64_t>(vocab.size_, *offset + 256);
  }
  vocab.append_eos_ = json.value("append_eos", false);
  for (auto [key, value] :
       {std::pair<const char*, int64_t>{"pad_id", *pad}, {"unk_id", *unk}, {"eos_id", *eos}}) {
    if (value < -1 || value >= vocab.size_ || (value == -1 && std::string(key) == "pad_id")) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": ", key, " = ", value, " is outside the ", vocab.size_, " ids"));
    }
  }
  if (vocab.append_eos_ && *eos < 0) {
    return absl::InvalidArgumentError(name + ": append_eos needs an eos_id");
  }
  if (*max_length < 0 || (vocab.append_eos_ && *max_length == 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": max_length ", *max_length, " leaves no room for the input"));
  }
  vocab.pad_id_ = static_cast<int32_t>(*pad);
  vocab.unk_id_ = static_cast<int32_t>(*unk);
  vocab.eos_id_ = static_cast<int32_t>(*eos);
  vocab.byte_offset_ = static_cast<int32_t>(*offset);
  vocab.max_length_ = *max_length;
  return vocab;
}

absl::StatusOr<LraVocabulary> LraVocabulary::Load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open LRA vocabulary ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  nlohmann::json json = nlohmann::json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return absl::InvalidArgumentError(path + ": not valid JSON");
  return FromJson(json, path);
}

absl::StatusOr<int32_t> LraVocabulary::Lookup(std::string_view token) const {
  auto it = ids_.find(absl::string_view(token.data(), token.size()));
  if (it == ids_.end() && kind_ == Kind::kListOps && token == "]") it = ids_.find("X");
  if (it != ids_.end()) return it->second;
  if (unk_id_ >= 0) return unk_id_;
  return absl::InvalidArgumentError(absl::StrCat(
      "token '", std::string(token), "' is not in the LRA vocabulary, which has no unk id"));
}

absl::StatusOr<std::vector<int32_t>> LraVocabulary::Encode(std::string_view text) const {
  const int64_t room =
      max_length_ > 0 ? max_length_ - (append_eos_ ? 1 : 0) : std::numeric_limits<int64_t>::max();
  std::vector<int32_t> ids;
  auto add = [&](std::string_view token) -> absl::Status {
    absl::StatusOr<int32_t> id = Lookup(token);
    if (!id.ok()) return id.status();
    ids.push_back(*id);
    return absl::OkStatus();
  };
  switch (kind_) {
    case Kind::kListOps:
      for (std::string_view token : ListOpsTokens(text)) {
        if (static_cast<int64_t>(ids.size()) >= room) break;
        if (absl::Status s = add(token); !s.ok()) return s;
      }
      break;
    case Kind::kBytes:
      for (size_t i = 0; i < text.size() && static_cast<int64_t>(ids.size()) < room; ++i) {
        ids.push_back(static_cast<int32_t>(static_cast<unsigned char>(text[i])) + byte_offset_);
      }
      break;
    case Kind::kChars:
      for (size_t pos = 0; pos < text.size() && static_cast<int64_t>(ids.size()) < room;) {
        size_t n = utf8::SequenceLength(text, pos);
        if (n == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("text is not valid UTF-8 at byte ", pos, " (character vocabulary)"));
        }
        if (absl::Status s = add(text.substr(pos, n)); !s.ok()) return s;
        pos += n;
      }
      break;
  }
  if (append_eos_) ids.push_back(eos_id_);
  return ids;
}

}  // namespace hgeval
