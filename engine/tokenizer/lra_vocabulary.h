// Tokenisation of Long Range Arena inputs with the vocabulary file shipped beside an LRA
// classifier checkpoint (`lra_vocab.json`). Three kinds, as the LRA pipelines build them:
//   "listops": LRA's ListOps tokenizer: '(' and ')' deleted, then split on whitespace
//              (LRA spells the closing token "X", OL/S4 keep "]": the file's token list
//              decides, and a "]" missing from it is looked up as "X").
//   "bytes":   byte-level text (tfds ByteTextEncoder style): byte b -> b + byte_offset.
//   "chars":   character-level text (OL/S4's torchtext vocab over list(str)): one token per
//              Unicode code point.
// The file:
//   {"kind": "listops"|"bytes"|"chars", "tokens": ["<pad>", "<unk>", "<eos>", ...],
//    "pad_id": 0, "unk_id": 1 (or -1), "eos_id": 2 (or -1), "append_eos": true,
//    "byte_offset": 1 (bytes only), "max_length": 2048}
// A token missing from the list maps to unk_id (an error when there is none). The input is
// truncated so that the encoded sequence, EOS included, has at most max_length ids.
#ifndef HGEVAL_ENGINE_TOKENIZER_LRA_VOCABULARY_H_
#define HGEVAL_ENGINE_TOKENIZER_LRA_VOCABULARY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace hgeval {

class LraVocabulary {
 public:
  enum class Kind { kListOps, kBytes, kChars };

  // Parses the JSON object; `name` is used in messages. InvalidArgument naming the field.
  static absl::StatusOr<LraVocabulary> FromJson(const nlohmann::json& json,
                                                const std::string& name);
  // Reads `path` (a lra_vocab.json file).
  static absl::StatusOr<LraVocabulary> Load(const std::string& path);

  // The ids of `text`, EOS appended when the file says so, at most max_length of them.
  // InvalidArgument for a token outside the vocabulary when there is no unk id.
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const;

  Kind kind() const { return kind_; }
  int64_t size() const { return size_; }  // ids are in [0, size)
  int32_t pad_id() const { return pad_id_; }
  int64_t max_length() const { return max_length_; }

 private:
  absl::StatusOr<int32_t> Lookup(std::string_view token) const;

  Kind kind_ = Kind::kBytes;
  absl::flat_hash_map<std::string, int32_t> ids_;
  int64_t size_ = 0;
  int32_t pad_id_ = 0;
  int32_t unk_id_ = -1;
  int32_t eos_id_ = -1;
  bool append_eos_ = false;
  int32_t byte_offset_ = 0;
  int64_t max_length_ = 0;
};

// LRA's ListOps split: '(' and ')' removed, whitespace-separated tokens.
std::vector<std::string_view> ListOpsTokens(std::string_view source);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_LRA_VOCABULARY_H_
