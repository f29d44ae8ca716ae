// tiktoken ranks files ("<base64 token> <rank>" per line) with the cl100k_base split
// pattern; byte-pair merging by rank as tiktoken's byte_pair_merge does.
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer/bpe_merge.h"
#include "engine/tokenizer/regex_splitter.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_factories.h"
#include "engine/tokenizer/utf8.h"
#include "engine/tokenizer/word_cache.h"
#include "engine/util/sha256.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

struct SpecialToken {
  std::string text;
  int32_t id;
};

class TiktokenTokenizer final : public Tokenizer {
 public:
  TiktokenTokenizer(std::vector<std::string> tokens, std::vector<SpecialToken> specials,
                    std::unique_ptr<RegexSplitter> splitter, std::string hash)
      : tokens_(std::move(tokens)),
        specials_(std::move(specials)),
        splitter_(std::move(splitter)),
        hash_(std::move(hash)) {
    for (int32_t id = 0; id < static_cast<int32_t>(tokens_.size()); ++id) {
      if (!tokens_[id].empty()) ranks_.emplace(tokens_[id], id);
    }
    for (const SpecialToken& s : specials_) {
      if (s.text == "<|endoftext|>") eos_id_ = s.id;
    }
    vocab_size_ = static_cast<int32_t>(tokens_.size());
    for (const SpecialToken& s : specials_) vocab_size_ = std::max(vocab_size_, s.id + 1);
    for (int b = 0; b < 256; ++b) {
      const auto it = ranks_.find(absl::string_view(reinterpret_cast<const char*>(&b), 1));
      byte_rank_[b] = it == ranks_.end() ? -1 : it->second;
    }
  }

  // Special tokens in the text are encoded as ordinary text (tiktoken's encode_ordinary):
  // text from documents must not be able to inject control tokens.
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool /*add_special*/) const override {
    if (const size_t bad = utf8::FirstInvalidOffset(text); bad != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("text is not valid UTF-8 (byte offset ", bad, ")"));
    }
    std::vector<std::string_view> pieces;
    splitter_->Split(text, &pieces);
    std::vector<int32_t> ids;
    ids.reserve(text.size() / 3 + 1);
    for (const std::string_view piece : pieces) {
      cache_.Lookup(
          piece, [this](std::string_view p, std::vector<int32_t>* out) { EncodePiece(p, out); },
          &ids);
    }
    return ids;
  }

  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special) const override {
    std::string bytes;
    for (const int32_t id : ids) {
      if (id >= 0 && id < static_cast<int32_t>(tokens_.size()) && !tokens_[id].empty()) {
        bytes.append(tokens_[id]);
        continue;
      }
      const SpecialToken* special = FindSpecial(id);
      if (special == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("token id ", id, " is not in the vocabulary"));
      }
      if (!skip_special) bytes.append(special->text);
    }
    // tiktoken's decode(errors="replace").
    return utf8::ToValidLossy(bytes);
  }

  int32_t vocab_size() const override { return vocab_size_; }
  int32_t bos_id() const override { return -1; }
  int32_t eos_id() const override { return eos_id_; }
  bool adds_bos() const override { return false; }
  std::string IdToPiece(int32_t id) const override {
    if (id >= 0 && id < static_cast<int32_t>(tokens_.size())) return tokens_[id];
    const SpecialToken* special = FindSpecial(id);
    return special == nullptr ? "" : special->text;
  }
  std::string_view kind() const override { return "tiktoken"; }
  std::string ContentHash() const override { return hash_; }
  bool IsSpecial(int32_t id) const override { return FindSpecial(id) != nullptr; }

 private:
  const SpecialToken* FindSpecial(int32_t id) const {
    for (const SpecialToken& s : specials_) {
      if (s.id == id) return &s;
    }
    return nullptr;
  }

  void EncodePiece(std::string_view piece, std::vector<int32_t>* out) const {
    if (const auto it = ranks_.find(AbslView(piece)); it != ranks_.end()) {
      out->push_back(it->second);
      return;
    }
    std::vector<int32_t> symbols;
    symbols.reserve(piece.size());
    for (const char c : piece) symbols.push_back(byte_rank_[static_cast<uint8_t>(c)]);
    std::string joined;
    bpe::MergePairs<int32_t>(&symbols, [&](int32_t a, int32_t b, int32_t* rank, int32_t* merged) {
      joined.assign(tokens_[a]);
      joined.append(tokens_[b]);
      const auto it = ranks_.find(AbslView(joined));
      if (it == ranks_.end()) return false;
      *rank = it->second;
      *merged = it->second;
      return true;
    });
    out->insert(out->end(), symbols.begin(), symbols.end());
  }

  std::vector<std::string> tokens_;  // rank -> bytes ("" for unused ranks)
  std::vector<SpecialToken> specials_;
  std::unique_ptr<RegexSplitter> splitter_;
  std::string hash_;
  absl::flat_hash_map<std::string, int32_t> ranks_;
  std::array<int32_t, 256> byte_rank_{};
  int32_t vocab_size_ = 0;
  int32_t eos_id_ = -1;
  WordCache cache_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeTiktokenTokenizer(std::string_view contents,
                                                                 std::string_view base_name) {
  std::vector<std::string> tokens;
  size_t line_number = 0;
  for (size_t pos = 0; pos < contents.size();) {
    size_t end = contents.find('\n', pos);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    std::string bytes;
    int64_t rank;
    if (space == std::string_view::npos ||
        !absl::Base64Unescape(AbslView(line.substr(0, space)), &bytes) || bytes.empty() ||
        !absl::SimpleAtoi(AbslView(line.substr(space + 1)), &rank) || rank < 0 ||
        rank >= (1 << 24)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tiktoken file: line ", line_number, " is not \"<base64> <rank>\""));
    }
    if (rank >= static_cast<int64_t>(tokens.size())) tokens.resize(rank + 1);
    if (!tokens[rank].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tiktoken file: rank ", rank, " appears twice"));
    }
    tokens[rank] = std::move(bytes);
  }
  // Every single byte must be a token, or byte-pair merging cannot start.
  {
    std::vector<bool> have(256, false);
    for (const std::string& t : tokens) {
      if (t.size() == 1) have[static_cast<uint8_t>(t[0])] = true;
    }
    for (int b = 0; b < 256; ++b) {
      if (!have[b]) {
        return absl::InvalidArgumentError(
            absl::StrCat("tiktoken file: no token for the single byte ", b));
      }
    }
  }
  std::vector<SpecialToken> specials;
  RegexSplitter::Pattern pattern = RegexSplitter::Pattern::kCl100k;
  if (absl::StrContains(AbslView(base_name), "cl100k")) {
    specials = {{"<|endoftext|>", 100257},
                {"<|fim_prefix|>", 100258},
                {"<|fim_middle|>", 100259},
                {"<|fim_suffix|>", 100260},
                {"<|endofprompt|>", 100276}};
  } else if (absl::StrContains(AbslView(base_name), "r50k") ||
             absl::StrContains(AbslView(base_name), "p50k")) {
    // r50k/p50k use GPT-2's pattern (their `\s++$` adds nothing to `\s+(?!\S)` there).
    pattern = RegexSplitter::Pattern::kGpt2;
    specials = {{"<|endoftext|>", 50256}};
  } else if (absl::StrContains(AbslView(base_name), "o200k")) {
    return absl::UnimplementedError("o200k_base's split pattern is not implemented");
  }
  for (const SpecialToken& s : specials) {
    if (s.id < static_cast<int32_t>(tokens.size()) && !tokens[s.id].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("tiktoken file: special token ", s.text,
                                                     "'s id ", s.id, " is an ordinary rank"));
    }
  }
  HG_ASSIGN_OR_RETURN(auto splitter, RegexSplitter::Create(pattern));
  std::string hash = Sha256Hex(absl::StrCat("tiktoken:", AbslView(base_name),
                                            absl::string_view("\0", 1), AbslView(contents)));
  return std::unique_ptr<Tokenizer>(new TiktokenTokenizer(std::move(tokens), std::move(specials),
                                                          std::move(splitter), std::move(hash)));
}

}  // namespace hgeval
