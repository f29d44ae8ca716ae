// llama2.c tokenizer files (tok512.bin, tokenizer.bin), encoding and decoding as run.c.
//
// File format: int32 max_token_length, then per token: float32 score, int32 length, bytes.
// The exporter stores "▁" as a space, BOS/EOS as "\n<s>\n" / "\n</s>\n", and byte tokens
// as the text "<0xNN>".
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer/bpe_merge.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_factories.h"
#include "engine/tokenizer/utf8.h"
#include "engine/util/sha256.h"

namespace hgeval {
namespace {

absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr int32_t kBos = 1;
constexpr int32_t kEos = 2;
constexpr int32_t kByteOffset = 3;  // run.c: byte b falls back to token b + 3

class Llama2cTokenizer final : public Tokenizer {
 public:
  Llama2cTokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::string hash)
      : pieces_(std::move(pieces)), scores_(std::move(scores)), hash_(std::move(hash)) {
    // run.c looks strings up with bsearch over the sorted vocabulary; with duplicate
    // strings the first id is the natural choice (the exported vocabularies have none).
    for (int32_t id = 0; id < static_cast<int32_t>(pieces_.size()); ++id) {
      lookup_.try_emplace(pieces_[id], id);
    }
    byte_piece_.resize(pieces_.size(), -1);
    for (int32_t id = 0; id < static_cast<int32_t>(pieces_.size()); ++id) {
      unsigned char b;
      if (utf8::ParseByteFallbackPiece(pieces_[id], &b)) byte_piece_[id] = b;
    }
  }

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool add_special) const override {
    if (const size_t bad = utf8::FirstInvalidOffset(text); bad != std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("text is not valid UTF-8 (byte offset ", bad, ")"));
    }
    std::vector<int32_t> ids;
    ids.reserve(text.size() + 2);
    if (add_special) ids.push_back(kBos);
    if (!text.empty()) {
      const auto it = lookup_.find(" ");
      if (it == lookup_.end()) {
        return absl::FailedPreconditionError("llama2.c vocabulary has no \" \" token");
      }
      ids.push_back(it->second);  // the dummy prefix
    }
    for (size_t pos = 0; pos < text.size();) {
      const size_t n = utf8::SequenceLength(text, pos);
      const std::string_view point = text.substr(pos, n);
      if (const auto it = lookup_.find(AbslView(point)); it != lookup_.end()) {
        ids.push_back(it->second);
      } else {
        for (const char c : point) {
          const int32_t id = static_cast<unsigned char>(c) + kByteOffset;
          if (id >= vocab_size()) {
            return absl::InvalidArgumentError("llama2.c vocabulary lacks byte fallback tokens");
          }
          ids.push_back(id);
        }
      }
      pos += n;
    }
    // run.c merges the pair whose concatenation has the highest score (first on ties),
    // BOS included in the scan.
    std::string joined;
    bpe::MergePairs<float>(&ids,
                           [&](int32_t left, int32_t right, float* priority, int32_t* merged) {
                             joined.assign(pieces_[left]);
                             joined.append(pieces_[right]);
                             const auto it = lookup_.find(joined);
                             if (it == lookup_.end()) return false;
                             const float score = scores_[it->second];
                             if (!(score > -1e10f)) return false;
                             *priority = -score;
                             *merged = it->second;
                             return true;
                           });
    return ids;
  }

  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special) const override {
    std::string bytes;
    // The start of the text counts as "after BOS", as for SentencePiece: the dummy-prefix
    // space of the first piece is dropped.
    int32_t prev = kBos;
    for (const int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("token id ", id, " out of range [0, ", vocab_size(), ")"));
      }
      if (IsSpecial(id) && skip_special) {
        prev = id;
        continue;
      }
      std::string_view piece = DisplayPiece(id);
      if (prev == kBos && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
      if (byte_piece_[id] >= 0) {
        bytes.push_back(static_cast<char>(byte_piece_[id]));
      } else {
        bytes.append(piece);
      }
      prev = id;
    }
    return utf8::ToValidLossy(bytes);
  }

  int32_t vocab_size() const override { return static_cast<int32_t>(pieces_.size()); }
  int32_t bos_id() const override { return kBos; }
  int32_t eos_id() const override { return kEos; }
  bool adds_bos() const override { return true; }
  std::string IdToPiece(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return "";
    return std::string(DisplayPiece(id));
  }
  std::string_view kind() const override { return "llama2c"; }
  std::string ContentHash() const override { return hash_; }
  bool IsSpecial(int32_t id) const override { return id == kBos || id == kEos; }

 private:
  // The exporter wrote BOS/EOS as "\n<s>\n" / "\n</s>\n" (run.c prints them that way);
  // outside the merge loop they are shown as SentencePiece names them.
  std::string_view DisplayPiece(int32_t id) const {
    const std::string& piece = pieces_[id];
    if (piece == "\n<s>\n") return "<s>";
    if (piece == "\n</s>\n") return "</s>";
    return piece;
  }

  std::vector<std::string> pieces_;  // as stored in the file (used for merging)
  std::vector<float> scores_;
  std::string hash_;
  absl::flat_hash_map<std::string, int32_t> lookup_;
  std::vector<int> byte_piece_;  // byte value for "<0xNN>" pieces, else -1
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeLlama2cTokenizer(std::string_view contents) {
  size_t pos = 0;
  auto read = [&](void* dst, size_t n) {
    if (contents.size() - pos < n) return false;
    std::memcpy(dst, contents.data() + pos, n);
    pos += n;
    return true;
  };
  int32_t max_token_length = 0;
  if (!read(&max_token_length, 4) || max_token_length <= 0) {
    return absl::InvalidArgumentError("llama2.c tokenizer: missing or bad max_token_length");
  }
  std::vector<std::string> pieces;
  std::vector<float> scores;
  while (pos < contents.size()) {
    float score;
    int32_t length;
    if (!read(&score, 4) || !read(&length, 4)) {
      return absl::InvalidArgumentError(
          absl::StrCat("llama2.c tokenizer: truncated entry for token ", pieces.size()));
    }
    if (length < 0 || length > max_token_length ||
        static_cast<size_t>(length) > contents.size() - pos) {
      return absl::InvalidArgumentError(
          absl::StrCat("llama2.c tokenizer: token ", pieces.size(), " has bad length ", length));
    }
    if (!std::isfinite(score)) {
      return absl::InvalidArgumentError(
          absl::StrCat("llama2.c tokenizer: token ", pieces.size(), " has a non-finite score"));
    }
    pieces.emplace_back(contents.substr(pos, length));
    scores.push_back(score);
    pos += length;
  }
  if (pieces.size() < 3 + 256) {
    return absl::InvalidArgumentError(absl::StrCat("llama2.c tokenizer: ", pieces.size(),
                                                   " tokens; need <unk>, BOS, EOS and 256 bytes"));
  }
  std::string hash =
      Sha256Hex(absl::StrCat("llama2c", absl::string_view("\0", 1), AbslView(contents)));
  return std::unique_ptr<Tokenizer>(
      new Llama2cTokenizer(std::move(pieces), std::move(scores), std::move(hash)));
}

}  // namespace hgeval
