// HF tokenizers' tokenizer.json with a BPE model: SentencePiece-style BPE with byte
// fallback (Llama-2, Mistral) and byte-level BPE (GPT-2).
//
// The pipeline follows the tokenizers library: added tokens are split off the raw text
// first (leftmost-longest), each remaining segment is normalized, split again on
// "normalized" added tokens, pre-tokenized into words, and each word is BPE-merged by
// merge rank; the post-processor template adds BOS/EOS. Decoding maps ids to token
// strings and runs the decoder chain. Unsupported components are a clear error at load.
#include <re2/re2.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer/bpe_merge.h"
#include "engine/tokenizer/regex_splitter.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_config.h"
#include "engine/tokenizer/utf8.h"
#include "engine/tokenizer/word_cache.h"
#include "engine/util/sha256.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

using nlohmann::json;

// Upper bound on token ids accepted from a file (guards allocations on hostile input).
constexpr int64_t kMaxTokenId = 1 << 24;
constexpr char kSpaceMark[] = "\xE2\x96\x81";  // U+2581, SentencePiece's "▁"

absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status Invalid(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tokenizer.json: ", AbslView(what)));
}

// ---------------------------------------------------------------------------------------
// JSON access helpers (every failure is an InvalidArgument naming the field).

const json* Find(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::StatusOr<std::string> GetString(const json& object, const char* key, const char* where) {
  const json* v = Find(object, key);
  if (v == nullptr || !v->is_string()) {
    return Invalid(absl::StrCat(where, ": \"", key, "\" must be a string"));
  }
  return v->get<std::string>();
}

std::string GetStringOr(const json& object, const char* key, std::string fallback) {
  const json* v = Find(object, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : fallback;
}

bool GetBoolOr(const json& object, const char* key, bool fallback) {
  const json* v = Find(object, key);
  return v != nullptr && v->is_boolean() ? v->get<bool>() : fallback;
}

absl::StatusOr<std::string> GetType(const json& object, const char* where) {
  if (!object.is_object()) return Invalid(absl::StrCat(where, " must be an object"));
  return GetString(object, "type", where);
}

// A single Unicode char given as a JSON string (Metaspace replacement, Strip content).
absl::StatusOr<std::string> GetChar(const json& object, const char* key, const char* where) {
  HG_ASSIGN_OR_RETURN(std::string s, GetString(object, key, where));
  if (s.empty() || utf8::SequenceLength(s, 0) != s.size()) {
    return Invalid(absl::StrCat(where, ": \"", key, "\" must be one character"));
  }
  return s;
}

// A Replace pattern: {"String": "..."} or {"Regex": "..."}.
struct Pattern {
  std::string literal;
  std::shared_ptr<RE2> regex;  // set for {"Regex": ...}
};

absl::StatusOr<Pattern> GetPattern(const json& object, const char* where) {
  const json* p = Find(object, "pattern");
  if (p == nullptr || !p->is_object()) return Invalid(absl::StrCat(where, ": missing pattern"));
  Pattern pattern;
  if (const json* s = Find(*p, "String"); s != nullptr && s->is_string()) {
    pattern.literal = s->get<std::string>();
    if (pattern.literal.empty()) return Invalid(absl::StrCat(where, ": empty pattern"));
    return pattern;
  }
  if (const json* r = Find(*p, "Regex"); r != nullptr && r->is_string()) {
    RE2::Options options;
    options.set_log_errors(false);
    options.set_max_mem(8 << 20);
    pattern.regex = std::make_shared<RE2>(r->get<std::string>(), options);
    if (!pattern.regex->ok()) {
      return Invalid(absl::StrCat(where, ": regex not supported by RE2: ", pattern.regex->error()));
    }
    return pattern;
  }
  return Invalid(absl::StrCat(where, ": pattern must be {\"String\": ...} or {\"Regex\": ...}"));
}

void ReplaceAll(const Pattern& pattern, const std::string& content, std::string* text) {
  if (pattern.regex != nullptr) {
    // RE2 rewrite strings treat '\' specially; the content is literal text.
    std::string rewrite;
    for (const char c : content) {
      if (c == '\\') rewrite.push_back('\\');
      rewrite.push_back(c);
    }
    RE2::GlobalReplace(text, *pattern.regex, rewrite);
    return;
  }
  if (text->find(pattern.literal) == std::string::npos) return;
  std::string out;
  out.reserve(text->size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text->find(pattern.literal, pos);
    if (hit == std::string::npos) break;
    out.append(*text, pos, hit - pos);
    out.append(content);
    pos = hit + pattern.literal.size();
  }
  out.append(*text, pos, std::string::npos);
  *text = std::move(out);
}

// ---------------------------------------------------------------------------------------
// GPT-2's byte <-> unicode char table (printable latin-1 bytes map to themselves, the rest
// to U+0100.. in byte order).

struct ByteLevelTable {
  std::array<std::string, 256> byte_to_char;
  absl::flat_hash_map<char32_t, uint8_t> char_to_byte;

  ByteLevelTable() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : 256 + next++;
      byte_to_char[b] = utf8::Encode(cp);
      char_to_byte[cp] = static_cast<uint8_t>(b);
    }
  }
};

const ByteLevelTable& GetByteLevelTable() {
  static const ByteLevelTable* table = new ByteLevelTable();
  return *table;
}

// ---------------------------------------------------------------------------------------
// Normalizers.

struct NormalizerStep {
  enum class Kind { kPrepend, kReplace, kStrip };
  Kind kind;
  std::string text;  // prepend text / replace content
  Pattern pattern;
  bool strip_left = false;
  bool strip_right = false;
};

absl::Status ParseNormalizer(const json& node, std::vector<NormalizerStep>* steps, int depth) {
  if (depth > 8) return Invalid("normalizer nesting too deep");
  HG_ASSIGN_OR_RETURN(const std::string type, GetType(node, "normalizer"));
  if (type == "Sequence") {
    const json* list = Find(node, "normalizers");
    if (list == nullptr || !list->is_array()) return Invalid("normalizer Sequence: no list");
    for (const json& child : *list) HG_RETURN_IF_ERROR(ParseNormalizer(child, steps, depth + 1));
    return absl::OkStatus();
  }
  NormalizerStep step;
  if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    HG_ASSIGN_OR_RETURN(step.text, GetString(node, "prepend", "Prepend normalizer"));
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    HG_ASSIGN_OR_RETURN(step.pattern, GetPattern(node, "Replace normalizer"));
    HG_ASSIGN_OR_RETURN(step.text, GetString(node, "content", "Replace normalizer"));
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.strip_left = GetBoolOr(node, "strip_left", false);
    step.strip_right = GetBoolOr(node, "strip_right", false);
  } else {
    return Invalid(absl::StrCat("unsupported normalizer type \"", type, "\""));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

void StripWhiteSpace(bool left, bool right, std::string* text) {
  // Strip removes Unicode White_Space (Rust's char::is_whitespace).
  size_t begin = 0, end = text->size();
  if (left) {
    while (begin < end) {
      const size_t n = utf8::SequenceLength(*text, begin);
      if (n == 0 || !utf8::IsWhiteSpace(utf8::DecodeAt(*text, begin))) break;
      begin += n;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin && (static_cast<unsigned char>((*text)[start]) & 0xC0) == 0x80) --start;
      if (!utf8::IsWhiteSpace(utf8::DecodeAt(*text, start))) break;
      end = start;
    }
  }
  *text = text->substr(begin, end - begin);
}

void Normalize(const std::vector<NormalizerStep>& steps, std::string* text) {
  for (const NormalizerStep& step : steps) {
    switch (step.kind) {
      case NormalizerStep::Kind::kPrepend:
        if (!text->empty()) text->insert(0, step.text);
        break;
      case NormalizerStep::Kind::kReplace:
        ReplaceAll(step.pattern, step.text, text);
        break;
      case NormalizerStep::Kind::kStrip:
        StripWhiteSpace(step.strip_left, step.strip_right, text);
        break;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Pre-tokenizers.

enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind { kMetaspace, kByteLevel };
  Kind kind;
  std::string replacement;  // Metaspace
  PrependScheme prepend = PrependScheme::kAlways;
  bool split = true;              // Metaspace
  bool add_prefix_space = false;  // ByteLevel
  bool use_regex = true;          // ByteLevel
};

absl::StatusOr<PrependScheme> ParsePrependScheme(const json& node, const char* where) {
  if (const json* scheme = Find(node, "prepend_scheme"); scheme != nullptr) {
    if (!scheme->is_string()) return Invalid(absl::StrCat(where, ": bad prepend_scheme"));
    const std::string s = scheme->get<std::string>();
    if (s == "always") return PrependScheme::kAlways;
    if (s == "first") return PrependScheme::kFirst;
    if (s == "never") return PrependScheme::kNever;
    return Invalid(absl::StrCat(where, ": unknown prepend_scheme \"", s, "\""));
  }
  // Legacy form: add_prefix_space (default true).
  return GetBoolOr(node, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
}

absl::Status ParsePreTokenizer(const json& node, std::vector<PreTokenizerStep>* steps, int depth) {
  if (depth > 8) return Invalid("pre_tokenizer nesting too deep");
  HG_ASSIGN_OR_RETURN(const std::string type, GetType(node, "pre_tokenizer"));
  if (type == "Sequence") {
    const json* list = Find(node, "pretokenizers");
    if (list == nullptr || !list->is_array()) return Invalid("pre_tokenizer Sequence: no list");
    for (const json& child : *list) {
      HG_RETURN_IF_ERROR(ParsePreTokenizer(child, steps, depth + 1));
    }
    return absl::OkStatus();
  }
  PreTokenizerStep step;
  if (type == "Metaspace") {
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    HG_ASSIGN_OR_RETURN(step.replacement, GetChar(node, "replacement", "Metaspace"));
    HG_ASSIGN_OR_RETURN(step.prepend, ParsePrependScheme(node, "Metaspace"));
    step.split = GetBoolOr(node, "split", true);
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    step.add_prefix_space = GetBoolOr(node, "add_prefix_space", true);
    step.use_regex = GetBoolOr(node, "use_regex", true);
  } else {
    return Invalid(absl::StrCat("unsupported pre_tokenizer type \"", type, "\""));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------
// Decoders.

struct DecoderStep {
  enum class Kind { kReplace, kByteFallback, kFuse, kStrip, kByteLevel, kMetaspace };
  Kind kind;
  Pattern pattern;    // Replace
  std::string text;   // Replace content / Strip content / Metaspace replacement
  int64_t start = 0;  // Strip
  int64_t stop = 0;   // Strip
  PrependScheme prepend = PrependScheme::kAlways;  // Metaspace
};

absl::Status ParseDecoder(const json& node, std::vector<DecoderStep>* steps, int depth) {
  if (depth > 8) return Invalid("decoder nesting too deep");
  HG_ASSIGN_OR_RETURN(const std::string type, GetType(node, "decoder"));
  if (type == "Sequence") {
    const json* list = Find(node, "decoders");
    if (list == nullptr || !list->is_array()) return Invalid("decoder Sequence: no list");
    for (const json& child : *list) HG_RETURN_IF_ERROR(ParseDecoder(child, steps, depth + 1));
    return absl::OkStatus();
  }
  DecoderStep step;
  if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    HG_ASSIGN_OR_RETURN(step.pattern, GetPattern(node, "Replace decoder"));
    HG_ASSIGN_OR_RETURN(step.text, GetString(node, "content", "Replace decoder"));
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    HG_ASSIGN_OR_RETURN(step.text, GetChar(node, "content", "Strip decoder"));
    const json* start = Find(node, "start");
    const json* stop = Find(node, "stop");
    if (start == nullptr || !start->is_number_unsigned() || stop == nullptr ||
        !stop->is_number_unsigned()) {
      return Invalid("Strip decoder: start and stop must be non-negative integers");
    }
    step.start = static_cast<int64_t>(std::min<uint64_t>(start->get<uint64_t>(), 1 << 20));
    step.stop = static_cast<int64_t>(std::min<uint64_t>(stop->get<uint64_t>(), 1 << 20));
  } else if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    HG_ASSIGN_OR_RETURN(step.text, GetChar(node, "replacement", "Metaspace decoder"));
    HG_ASSIGN_OR_RETURN(step.prepend, ParsePrependScheme(node, "Metaspace decoder"));
  } else {
    return Invalid(absl::StrCat("unsupported decoder type \"", type, "\""));
  }
  steps->push_back(std::move(step));
  return absl::OkStatus();
}

void RunDecoder(const DecoderStep& step, std::vector<std::string>* tokens) {
  switch (step.kind) {
    case DecoderStep::Kind::kReplace:
      for (std::string& t : *tokens) ReplaceAll(step.pattern, step.text, &t);
      return;
    case DecoderStep::Kind::kByteFallback: {
      std::vector<std::string> out;
      std::string bytes;
      size_t byte_count = 0;
      auto flush = [&] {
        if (byte_count == 0) return;
        if (utf8::IsValid(bytes)) {
          out.push_back(bytes);
        } else {
          for (size_t i = 0; i < byte_count; ++i) out.emplace_back(utf8::kReplacementChar);
        }
        bytes.clear();
        byte_count = 0;
      };
      for (std::string& t : *tokens) {
        uint8_t b;
        if (utf8::ParseByteFallbackPiece(t, &b)) {
          bytes.push_back(static_cast<char>(b));
          ++byte_count;
        } else {
          flush();
          out.push_back(std::move(t));
        }
      }
      flush();
      *tokens = std::move(out);
      return;
    }
    case DecoderStep::Kind::kFuse: {
      std::string joined;
      for (const std::string& t : *tokens) joined.append(t);
      tokens->assign(1, std::move(joined));
      return;
    }
    case DecoderStep::Kind::kStrip:
      for (std::string& t : *tokens) {
        size_t begin = 0;
        for (int64_t i = 0; i < step.start && t.compare(begin, step.text.size(), step.text) == 0;
             ++i) {
          begin += step.text.size();
        }
        size_t end = t.size();
        for (int64_t i = 0; i < step.stop && end >= begin + step.text.size() &&
                            t.compare(end - step.text.size(), step.text.size(), step.text) == 0;
             ++i) {
          end -= step.text.size();
        }
        t = t.substr(begin, end - begin);
      }
      return;
    case DecoderStep::Kind::kByteLevel: {
      const ByteLevelTable& table = GetByteLevelTable();
      std::string bytes;
      for (const std::string& t : *tokens) {
        // A token with any char outside the table contributes its own UTF-8 bytes.
        std::string mapped;
        bool all_mapped = true;
        for (size_t pos = 0; pos < t.size();) {
          const size_t n = utf8::SequenceLength(t, pos);
          const auto it =
              n == 0 ? table.char_to_byte.end() : table.char_to_byte.find(utf8::DecodeAt(t, pos));
          if (it == table.char_to_byte.end()) {
            all_mapped = false;
            break;
          }
          mapped.push_back(static_cast<char>(it->second));
          pos += n;
        }
        bytes.append(all_mapped ? mapped : t);
      }
      tokens->assign(1, utf8::ToValidLossy(bytes));
      return;
    }
    case DecoderStep::Kind::kMetaspace:
      for (size_t i = 0; i < tokens->size(); ++i) {
        std::string& t = (*tokens)[i];
        std::string out;
        for (size_t pos = 0; pos < t.size();) {
          if (t.compare(pos, step.text.size(), step.text) == 0) {
            if (!(i == 0 && step.prepend != PrependScheme::kNever)) out.push_back(' ');
            pos += step.text.size();
          } else {
            out.push_back(t[pos++]);
          }
        }
        t = std::move(out);
      }
      return;
  }
}

// ---------------------------------------------------------------------------------------
// Added tokens.

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

// Finds added tokens in text, leftmost-longest, as the tokenizers AddedVocabulary does.
class AddedTokenMatcher {
 public:
  void Add(const AddedToken* token) {
    if (token->content.empty()) return;
    by_first_byte_[static_cast<unsigned char>(token->content[0])].push_back(token);
  }
  void Finish() {
    for (auto& list : by_first_byte_) {
      std::stable_sort(list.begin(), list.end(), [](const AddedToken* a, const AddedToken* b) {
        return a->content.size() > b->content.size();
      });
    }
  }
  bool empty() const {
    for (const auto& list : by_first_byte_) {
      if (!list.empty()) return false;
    }
    return true;
  }

  struct Piece {
    std::string_view text;    // when token == nullptr
    const AddedToken* token;  // the matched added token, or nullptr for plain text
    size_t offset;            // byte offset of the piece in the input
  };

  // Splits text into plain-text pieces and added-token matches (plain pieces may be empty
  // only when the text is empty).
  void Split(std::string_view text, std::vector<Piece>* pieces) const {
    size_t plain_start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      const AddedToken* hit = nullptr;
      for (const AddedToken* token : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
        if (text.compare(pos, token->content.size(), token->content) != 0) continue;
        if (token->single_word && !IsSingleWord(text, pos, pos + token->content.size())) {
          continue;
        }
        hit = token;
        break;
      }
      if (hit == nullptr) {
        ++pos;
        continue;
      }
      size_t start = pos;
      size_t stop = pos + hit->content.size();
      if (hit->lstrip) {
        while (start > plain_start && IsAsciiOrUnicodeSpaceBefore(text, start, &start)) {
        }
      }
      if (hit->rstrip) {
        while (stop < text.size() && IsSpaceAt(text, &stop)) {
        }
      }
      if (start > plain_start) {
        pieces->push_back({text.substr(plain_start, start - plain_start), nullptr, plain_start});
      }
      pieces->push_back({text.substr(start, stop - start), hit, start});
      pos = plain_start = stop;
    }
    if (plain_start < text.size()) {
      pieces->push_back({text.substr(plain_start), nullptr, plain_start});
    }
  }

 private:
  static bool IsWordChar(char32_t cp) {
    if (cp < 0x80) return std::isalnum(static_cast<int>(cp)) || cp == '_';
    return !utf8::IsWhiteSpace(cp);
  }
  static bool IsSingleWord(std::string_view text, size_t start, size_t stop) {
    if (start > 0) {
      size_t p = start - 1;
      while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
      if (IsWordChar(utf8::DecodeAt(text, p))) return false;
    }
    if (stop < text.size() && IsWordChar(utf8::DecodeAt(text, stop))) return false;
    return true;
  }
  // If the char before *pos is white space, moves *pos onto it and returns true.
  static bool IsAsciiOrUnicodeSpaceBefore(std::string_view text, size_t pos, size_t* out) {
    size_t p = pos - 1;
    while (p > 0 && (static_cast<unsigned char>(text[p]) & 0xC0) == 0x80) --p;
    if (!utf8::IsWhiteSpace(utf8::DecodeAt(text, p))) return false;
    *out = p;
    return true;
  }
  // If the char at *pos is white space, moves *pos past it and returns true.
  static bool IsSpaceAt(std::string_view text, size_t* pos) {
    const size_t n = utf8::SequenceLength(text, *pos);
    if (n == 0 || !utf8::IsWhiteSpace(utf8::DecodeAt(text, *pos))) return false;
    *pos += n;
    return true;
  }

  std::array<std::vector<const AddedToken*>, 256> by_first_byte_;
};

// ---------------------------------------------------------------------------------------
// The BPE model.

struct BpeModel {
  absl::flat_hash_map<std::string, int32_t> vocab;
  absl::flat_hash_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // pair -> rank, id
  int32_t unk_id = -1;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;
  std::string continuing_subword_prefix;
  std::string end_of_word_suffix;
  std::array<int32_t, 256> byte_token{};  // "<0xNN>" ids, -1 when absent
  // Whether a merge joins a symbol ending in another character to one starting with the
  // space mark "▁" (SentencePiece-style vocabularies have none); see SplitsAtSpaceMarks.
  bool merges_cross_space_marks = false;

  // Whether BPE on a word equals BPE on its pieces split before each run of "▁" that
  // follows another character: true when no merge can join across such a point (and the
  // options that make a result depend on the whole word are off), because BPE only ever
  // merges adjacent pairs, so pieces that no merge joins are merged independently, each
  // in the same (rank, position) order. Such a word is a whole document (no
  // pre-tokenizer splits it), too long for the word cache; its pieces are words.
  bool SplitsAtSpaceMarks() const {
    return !merges_cross_space_marks && !ignore_merges && continuing_subword_prefix.empty() &&
           end_of_word_suffix.empty() && Lookup(kSpaceMark) >= 0;
  }

  static uint64_t PairKey(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  int32_t Lookup(std::string_view s) const {
    const auto it = vocab.find(AbslView(s));
    return it == vocab.end() ? -1 : it->second;
  }

  void Tokenize(std::string_view word, std::vector<int32_t>* out) const {
    if (word.empty()) return;
    if (ignore_merges) {
      if (const int32_t id = Lookup(word); id >= 0) {
        out->push_back(id);
        return;
      }
    }
    std::vector<int32_t> symbols;
    symbols.reserve(word.size());
    bool last_was_unk = false;
    std::string scratch;
    for (size_t pos = 0; pos < word.size();) {
      size_t n = utf8::SequenceLength(word, pos);
      if (n == 0) n = 1;  // unreachable for valid input; keeps progress
      std::string_view s = word.substr(pos, n);
      const bool first = pos == 0;
      pos += n;
      const bool last = pos >= word.size();
      if ((!first && !continuing_subword_prefix.empty()) || (last && !end_of_word_suffix.empty())) {
        scratch.clear();
        if (!first) scratch.append(continuing_subword_prefix);
        scratch.append(s);
        if (last) scratch.append(end_of_word_suffix);
        s = scratch;
      }
      if (const int32_t id = Lookup(s); id >= 0) {
        symbols.push_back(id);
        last_was_unk = false;
        continue;
      }
      if (byte_fallback) {
        bool all = true;
        for (const char c : s) all = all && byte_token[static_cast<unsigned char>(c)] >= 0;
        if (all) {
          for (const char c : s) symbols.push_back(byte_token[static_cast<unsigned char>(c)]);
          last_was_unk = false;
          continue;
        }
      }
      if (unk_id >= 0) {
        if (!(fuse_unk && last_was_unk)) symbols.push_back(unk_id);
        last_was_unk = true;
      }
    }
    bpe::MergePairs<int32_t>(&symbols,
                             [this](int32_t a, int32_t b, int32_t* rank, int32_t* merged) {
                               const auto it = merges.find(PairKey(a, b));
                               if (it == merges.end()) return false;
                               *rank = it->second.first;
                               *merged = it->second.second;
                               return true;
                             });
    out->insert(out->end(), symbols.begin(), symbols.end());
  }
};

// ---------------------------------------------------------------------------------------
// The tokenizer.

class HfTokenizer final : public Tokenizer {
 public:
  absl::Status Load(std::string_view tokenizer_json, std::string_view config_json);

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool add_special) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(id_to_token_.size()); }
  int32_t bos_id() const override { return bos_id_; }
  int32_t eos_id() const override { return eos_id_; }
  bool adds_bos() const override {
    return bos_id_ >= 0 && std::find(prefix_.begin(), prefix_.end(), bos_id_) != prefix_.end();
  }
  std::string IdToPiece(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return "";
    return id_to_token_[id];
  }
  std::string_view kind() const override { return byte_level_ ? "hf-bytelevel" : "hf-bpe"; }
  std::string ContentHash() const override { return hash_; }
  bool IsSpecial(int32_t id) const override { return special_ids_.contains(id); }

 private:
  absl::Status LoadModel(const json& model);
  absl::Status LoadAddedTokens(const json& root);
  absl::Status LoadPostProcessor(const json& node, int depth);
  int32_t TokenId(std::string_view text) const;

  // Normalizes, pre-tokenizes and BPE-encodes one plain-text piece.
  void EncodePlain(std::string_view text, bool first_in_text, std::vector<int32_t>* ids) const;
  void EncodeNormalized(std::string_view text, bool first_in_text, std::vector<int32_t>* ids) const;
  void EncodeWord(std::string_view word, std::vector<int32_t>* ids) const;

  BpeModel model_;
  std::vector<std::string> id_to_token_;
  std::vector<AddedToken> added_;
  AddedTokenMatcher raw_matcher_;         // normalized == false
  AddedTokenMatcher normalized_matcher_;  // normalized == true
  absl::flat_hash_set<int32_t> special_ids_;
  std::vector<NormalizerStep> normalizer_;
  std::vector<PreTokenizerStep> pre_tokenizer_;
  std::unique_ptr<RegexSplitter> byte_level_splitter_;
  bool byte_level_ = false;
  bool has_decoder_ = false;
  std::vector<DecoderStep> decoder_;
  std::vector<int32_t> prefix_;  // added by Encode(add_special=true) before the text
  std::vector<int32_t> suffix_;  // ... and after it
  int32_t bos_id_ = -1;
  int32_t eos_id_ = -1;
  std::string hash_;
  WordCache cache_;
  bool split_at_space_marks_ = false;  // BpeModel::SplitsAtSpaceMarks, fixed at load
};

int32_t HfTokenizer::TokenId(std::string_view text) const {
  for (const AddedToken& t : added_) {
    if (t.content == text) return t.id;
  }
  return model_.Lookup(text);
}

absl::Status HfTokenizer::LoadModel(const json& model) {
  if (!model.is_object()) return Invalid("\"model\" must be an object");
  const std::string type = GetStringOr(model, "type", "BPE");
  if (type != "BPE") {
    return Invalid(absl::StrCat("unsupported model type \"", type, "\" (only BPE)"));
  }
  if (const json* dropout = Find(model, "dropout");
      dropout != nullptr && dropout->is_number() && dropout->get<double>() > 0) {
    return Invalid("BPE dropout is not supported (encoding would be random)");
  }
  const json* vocab = Find(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) return Invalid("model.vocab must be an object");
  int64_t max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer()) {
      return Invalid(absl::StrCat("model.vocab[\"", it.key(), "\"] is not an integer"));
    }
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= kMaxTokenId) {
      return Invalid(absl::StrCat("model.vocab[\"", it.key(), "\"] = ", id, " out of range"));
    }
    model_.vocab[it.key()] = static_cast<int32_t>(id);
    max_id = std::max(max_id, id);
  }
  if (max_id >= 2 * static_cast<int64_t>(model_.vocab.size()) + 1024) {
    return Invalid(absl::StrCat("model.vocab ids are sparse (max id ", max_id, " for ",
                                model_.vocab.size(), " entries)"));
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& [token, id] : model_.vocab) id_to_token_[id] = token;

  if (const json* unk = Find(model, "unk_token"); unk != nullptr) {
    if (!unk->is_string()) return Invalid("model.unk_token must be a string");
    model_.unk_id = model_.Lookup(unk->get<std::string>());
    if (model_.unk_id < 0) return Invalid("model.unk_token is not in the vocabulary");
  }
  model_.fuse_unk = GetBoolOr(model, "fuse_unk", false);
  model_.byte_fallback = GetBoolOr(model, "byte_fallback", false);
  model_.ignore_merges = GetBoolOr(model, "ignore_merges", false);
  model_.continuing_subword_prefix = GetStringOr(model, "continuing_subword_prefix", "");
  model_.end_of_word_suffix = GetStringOr(model, "end_of_word_suffix", "");
  for (int b = 0; b < 256; ++b) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    const std::string name = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    model_.byte_token[b] = model_.Lookup(name);
  }

  static const json* const kNoMerges = new json(json::array());
  const json* merges = Find(model, "merges");
  if (merges == nullptr) merges = kNoMerges;
  if (!merges->is_array()) return Invalid("model.merges must be an array");
  int32_t rank = 0;
  for (const json& merge : *merges) {
    std::string left, right;
    if (merge.is_string()) {
      // "a b": tokens never contain a space in this form.
      const std::string s = merge.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        return Invalid(absl::StrCat("merge ", rank, " \"", s, "\" is not \"a b\""));
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
               merge[1].is_string()) {
      left = merge[0].get<std::string>();
      right = merge[1].get<std::string>();
    } else {
      return Invalid(absl::StrCat("merge ", rank, " is neither \"a b\" nor [\"a\", \"b\"]"));
    }
    if (!absl::EndsWith(left, kSpaceMark) && absl::StartsWith(right, kSpaceMark)) {
      model_.merges_cross_space_marks = true;
    }
    const int32_t a = model_.Lookup(left);
    const int32_t b = model_.Lookup(right);
    const int32_t merged = model_.Lookup(left + right);
    if (a < 0 || b < 0 || merged < 0) {
      return Invalid(absl::StrCat("merge ", rank, " (\"", left, "\", \"", right,
                                  "\") uses a token missing from the vocabulary"));
    }
    // The first occurrence of a pair has the lowest rank; later duplicates never apply.
    model_.merges.try_emplace(BpeModel::PairKey(a, b), rank, merged);
    ++rank;
  }
  return absl::OkStatus();
}

absl::Status HfTokenizer::LoadAddedTokens(const json& root) {
  const json* list = Find(root, "added_tokens");
  if (list == nullptr) return absl::OkStatus();
  if (!list->is_array()) return Invalid("added_tokens must be an array");
  added_.reserve(list->size());
  for (const json& item : *list) {
    if (!item.is_object()) return Invalid("added_tokens entries must be objects");
    AddedToken token;
    const json* id = Find(item, "id");
    if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 ||
        id->get<int64_t>() >= kMaxTokenId) {
      return Invalid("added token without a valid id");
    }
    token.id = static_cast<int32_t>(id->get<int64_t>());
    HG_ASSIGN_OR_RETURN(token.content, GetString(item, "content", "added token"));
    if (token.content.empty()) return Invalid("added token with empty content");
    token.single_word = GetBoolOr(item, "single_word", false);
    token.lstrip = GetBoolOr(item, "lstrip", false);
    token.rstrip = GetBoolOr(item, "rstrip", false);
    token.normalized = GetBoolOr(item, "normalized", true);
    token.special = GetBoolOr(item, "special", false);
    added_.push_back(std::move(token));
  }
  // Added tokens extend the id space; their text wins over the model's for decoding.
  int64_t max_id = static_cast<int64_t>(id_to_token_.size()) - 1;
  for (const AddedToken& t : added_) max_id = std::max<int64_t>(max_id, t.id);
  if (max_id >= 2 * static_cast<int64_t>(id_to_token_.size() + added_.size()) + 1024) {
    return Invalid("added token ids are far beyond the vocabulary");
  }
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  for (const AddedToken& t : added_) {
    id_to_token_[t.id] = t.content;
    if (t.special) special_ids_.insert(t.id);
    // As in tokenizers' AddedVocabulary: "normalized" tokens are matched in the
    // normalized text, the others in the raw text.
    if (t.normalized) {
      normalized_matcher_.Add(&t);
    } else {
      raw_matcher_.Add(&t);
    }
  }
  raw_matcher_.Finish();
  normalized_matcher_.Finish();
  return absl::OkStatus();
}

absl::Status HfTokenizer::LoadPostProcessor(const json& node, int depth) {
  if (depth > 8) return Invalid("post_processor nesting too deep");
  HG_ASSIGN_OR_RETURN(const std::string type, GetType(node, "post_processor"));
  if (type == "Sequence") {
    const json* list = Find(node, "processors");
    if (list == nullptr || !list->is_array()) return Invalid("post_processor Sequence: no list");
    for (const json& child : *list) HG_RETURN_IF_ERROR(LoadPostProcessor(child, depth + 1));
    return absl::OkStatus();
  }
  if (type == "ByteLevel") return absl::OkStatus();  // offsets only
  if (type == "TemplateProcessing") {
    const json* single = Find(node, "single");
    if (single == nullptr || !single->is_array()) return Invalid("TemplateProcessing: no single");
    const json* specials = Find(node, "special_tokens");
    bool seen_sequence = false;
    for (const json& item : *single) {
      if (Find(item, "Sequence") != nullptr) {
        seen_sequence = true;
        continue;
      }
      const json* special = Find(item, "SpecialToken");
      if (special == nullptr) return Invalid("TemplateProcessing: unknown template item");
      HG_ASSIGN_OR_RETURN(const std::string name,
                          GetString(*special, "id", "TemplateProcessing SpecialToken"));
      const json* entry = specials != nullptr ? Find(*specials, name.c_str()) : nullptr;
      const json* ids = entry != nullptr ? Find(*entry, "ids") : nullptr;
      if (ids == nullptr || !ids->is_array()) {
        return Invalid(absl::StrCat("TemplateProcessing: special token \"", name, "\" has no ids"));
      }
      for (const json& id : *ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() >= static_cast<int64_t>(id_to_token_.size())) {
          return Invalid(absl::StrCat("TemplateProcessing: bad id for \"", name, "\""));
        }
        (seen_sequence ? suffix_ : prefix_).push_back(static_cast<int32_t>(id.get<int64_t>()));
      }
    }
    return absl::OkStatus();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      const json* pair = Find(node, key);
      if (pair == nullptr || !pair->is_array() || pair->size() != 2 ||
          !(*pair)[1].is_number_integer() || (*pair)[1].get<int64_t>() < 0 ||
          (*pair)[1].get<int64_t>() >= static_cast<int64_t>(id_to_token_.size())) {
        return Invalid(absl::StrCat(type, ": bad \"", key, "\""));
      }
      (std::string(key) == "cls" ? prefix_ : suffix_)
          .push_back(static_cast<int32_t>((*pair)[1].get<int64_t>()));
    }
    return absl::OkStatus();
  }
  return Invalid(absl::StrCat("unsupported post_processor type \"", type, "\""));
}

absl::Status HfTokenizer::Load(std::string_view tokenizer_json, std::string_view config_json) {
  HG_ASSIGN_OR_RETURN(const TokenizerConfig config, ParseTokenizerConfig(config_json));
  try {
    const json root = json::parse(tokenizer_json.begin(), tokenizer_json.end());
    if (!root.is_object()) return Invalid("top level is not an object");
    const json* model = Find(root, "model");
    if (model == nullptr) return Invalid("no \"model\"");
    HG_RETURN_IF_ERROR(LoadModel(*model));
    split_at_space_marks_ = model_.SplitsAtSpaceMarks();
    HG_RETURN_IF_ERROR(LoadAddedTokens(root));
    if (const json* n = Find(root, "normalizer"))
      HG_RETURN_IF_ERROR(ParseNormalizer(*n, &normalizer_, 0));
    if (const json* p = Find(root, "pre_tokenizer")) {
      HG_RETURN_IF_ERROR(ParsePreTokenizer(*p, &pre_tokenizer_, 0));
    }
    for (const PreTokenizerStep& step : pre_tokenizer_) {
      if (step.kind == PreTokenizerStep::Kind::kByteLevel) byte_level_ = true;
    }
    if (byte_level_) {
      HG_ASSIGN_OR_RETURN(byte_level_splitter_,
                          RegexSplitter::Create(RegexSplitter::Pattern::kGpt2));
    }
    if (const json* d = Find(root, "decoder")) {
      has_decoder_ = true;
      HG_RETURN_IF_ERROR(ParseDecoder(*d, &decoder_, 0));
    }
    if (const json* p = Find(root, "post_processor")) HG_RETURN_IF_ERROR(LoadPostProcessor(*p, 0));
  } catch (const json::exception& e) {
    return Invalid(e.what());
  } catch (const std::exception& e) {
    return Invalid(e.what());
  }

  // BOS/EOS ids: tokenizer_config.json names them; else the template's leading special
  // token; else the usual names.
  auto resolve = [&](const std::optional<std::string>& name) -> int32_t {
    return name.has_value() ? TokenId(*name) : -1;
  };
  bos_id_ = resolve(config.bos_token);
  eos_id_ = resolve(config.eos_token);
  if (bos_id_ < 0 && !prefix_.empty()) bos_id_ = prefix_.front();
  for (const char* name : {"<s>", "<|begin_of_text|>", "<|startoftext|>", "<|endoftext|>"}) {
    if (bos_id_ < 0) bos_id_ = TokenId(name);
  }
  for (const char* name : {"</s>", "<|end_of_text|>", "<|endoftext|>", "<eos>"}) {
    if (eos_id_ < 0) eos_id_ = TokenId(name);
  }
  // tokenizer_config.json's add_bos_token / add_eos_token decide what transformers adds
  // (LlamaTokenizerFast rebuilds its template from them); otherwise the template does.
  if (config.add_bos_token.has_value()) {
    prefix_.clear();
    if (*config.add_bos_token) {
      if (bos_id_ < 0) return Invalid("tokenizer_config.json asks for BOS but there is none");
      prefix_.push_back(bos_id_);
    }
  }
  if (config.add_eos_token.has_value()) {
    suffix_.clear();
    if (*config.add_eos_token) {
      if (eos_id_ < 0) return Invalid("tokenizer_config.json asks for EOS but there is none");
      suffix_.push_back(eos_id_);
    }
  }
  Sha256 hash;
  hash.Update("hf-tokenizer-json");
  hash.Update(std::string_view("\0", 1));
  hash.Update(tokenizer_json);
  hash.Update(std::string_view("\0", 1));
  hash.Update(absl::StrCat("prefix=", absl::StrJoin(prefix_, ","), ";suffix=",
                           absl::StrJoin(suffix_, ","), ";bos=", bos_id_, ";eos=", eos_id_));
  hash_ = hash.HexDigest();
  return absl::OkStatus();
}

void HfTokenizer::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  const auto encode_piece = [this, ids](std::string_view piece) {
    cache_.Lookup(
        piece, [this](std::string_view w, std::vector<int32_t>* out) { model_.Tokenize(w, out); },
        ids);
  };
  if (!split_at_space_marks_) {
    encode_piece(word);
    return;
  }
  const std::string_view mark = kSpaceMark;
  size_t begin = 0;
  for (size_t at = word.find(mark, 1); at != std::string_view::npos; at = word.find(mark, at + 1)) {
    const bool after_mark = at >= mark.size() && word.substr(at - mark.size(), mark.size()) == mark;
    if (after_mark) continue;
    encode_piece(word.substr(begin, at - begin));
    begin = at;
  }
  encode_piece(word.substr(begin));
}

void HfTokenizer::EncodeNormalized(std::string_view text, bool first_in_text,
                                   std::vector<int32_t>* ids) const {
  // words: the current split; each step maps every word to one or more words.
  std::vector<std::string> words = {std::string(text)};
  std::vector<std::string> next;
  const ByteLevelTable& byte_table = GetByteLevelTable();
  for (const PreTokenizerStep& step : pre_tokenizer_) {
    next.clear();
    for (size_t w = 0; w < words.size(); ++w) {
      std::string& word = words[w];
      if (step.kind == PreTokenizerStep::Kind::kMetaspace) {
        std::string replaced;
        replaced.reserve(word.size() + step.replacement.size());
        for (const char c : word) {
          if (c == ' ') {
            replaced.append(step.replacement);
          } else {
            replaced.push_back(c);
          }
        }
        const bool prepend = !absl::StartsWith(replaced, step.replacement) &&
                             (step.prepend == PrependScheme::kAlways ||
                              (step.prepend == PrependScheme::kFirst && first_in_text && w == 0));
        if (prepend) replaced.insert(0, step.replacement);
        if (!step.split) {
          next.push_back(std::move(replaced));
          continue;
        }
        // Split with the replacement merged into the word that follows it.
        const std::string& r = step.replacement;
        size_t start = 0;
        size_t pos = 0;
        while (pos < replaced.size()) {
          if (replaced.compare(pos, r.size(), r) == 0) {
            if (pos > start) {
              next.push_back(replaced.substr(start, pos - start));
              start = pos;
            }
            pos += r.size();
          } else {
            ++pos;
          }
        }
        if (start < replaced.size()) next.push_back(replaced.substr(start));
      } else {  // ByteLevel
        std::string source = std::move(word);
        if (step.add_prefix_space && !absl::StartsWith(source, " ")) source.insert(0, " ");
        std::vector<std::string_view> pieces;
        if (step.use_regex) {
          byte_level_splitter_->Split(source, &pieces);
        } else {
          pieces.push_back(source);
        }
        for (const std::string_view piece : pieces) {
          std::string mapped;
          mapped.reserve(piece.size() * 2);
          for (const char c : piece)
            mapped.append(byte_table.byte_to_char[static_cast<uint8_t>(c)]);
          next.push_back(std::move(mapped));
        }
      }
    }
    words.swap(next);
  }
  for (const std::string& word : words) EncodeWord(word, ids);
}

void HfTokenizer::EncodePlain(std::string_view text, bool first_in_text,
                              std::vector<int32_t>* ids) const {
  std::string normalized(text);
  Normalize(normalizer_, &normalized);
  if (normalized_matcher_.empty()) {
    EncodeNormalized(normalized, first_in_text, ids);
    return;
  }
  std::vector<AddedTokenMatcher::Piece> pieces;
  normalized_matcher_.Split(normalized, &pieces);
  for (const auto& piece : pieces) {
    if (piece.token != nullptr) {
      ids->push_back(piece.token->id);
    } else {
      EncodeNormalized(piece.text, first_in_text && piece.offset == 0, ids);
    }
  }
}

absl::StatusOr<std::vector<int32_t>> HfTokenizer::Encode(std::string_view text,
                                                         bool add_special) const {
  if (const size_t bad = utf8::FirstInvalidOffset(text); bad != std::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("text is not valid UTF-8 (byte offset ", bad, ")"));
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special) ids.insert(ids.end(), prefix_.begin(), prefix_.end());
  std::vector<AddedTokenMatcher::Piece> pieces;
  raw_matcher_.Split(text, &pieces);
  for (const auto& piece : pieces) {
    if (piece.token != nullptr) {
      ids.push_back(piece.token->id);
    } else {
      EncodePlain(piece.text, piece.offset == 0, &ids);
    }
  }
  if (add_special) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

absl::StatusOr<std::string> HfTokenizer::Decode(absl::Span<const int32_t> ids,
                                                bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size() || id_to_token_[id].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is not in the vocabulary"));
    }
    if (skip_special && IsSpecial(id)) continue;
    tokens.push_back(id_to_token_[id]);
  }
  if (!has_decoder_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) joined.push_back(' ');
      joined.append(tokens[i]);
    }
    return joined;
  }
  for (const DecoderStep& step : decoder_) RunDecoder(step, &tokens);
  std::string out;
  for (const std::string& t : tokens) out.append(t);
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizerFromJson(
    std::string_view tokenizer_json, std::string_view tokenizer_config_json) {
  auto tokenizer = std::make_unique<HfTokenizer>();
  HG_RETURN_IF_ERROR(tokenizer->Load(tokenizer_json, tokenizer_config_json));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

}  // namespace hgeval
