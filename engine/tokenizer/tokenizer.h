// Text <-> token ids. Implementations: SentencePiece .model (libsentencepiece), HF
// tokenizer.json (SentencePiece-style BPE with byte fallback, and GPT-2 byte-level BPE),
// tiktoken ranks files, and llama2.c tok512.bin.
#ifndef HGEVAL_ENGINE_TOKENIZER_TOKENIZER_H_
#define HGEVAL_ENGINE_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hgeval {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes UTF-8 text. add_special: prepend BOS (and whatever else the tokenizer's own
  // default adds, as HF add_special_tokens=True does). Invalid UTF-8 is an
  // InvalidArgument error.
  virtual absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                                      bool add_special) const = 0;
  // Decodes ids to text; special tokens (BOS/EOS/...) are skipped when skip_special.
  virtual absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                             bool skip_special = true) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when none
  virtual int32_t eos_id() const = 0;  // -1 when none
  // Whether Encode(text, /*add_special=*/true) prepends BOS (lm-eval regime B).
  virtual bool adds_bos() const = 0;
  // The token's text piece as stored in the vocabulary (for debugging and NIAH rules).
  virtual std::string IdToPiece(int32_t id) const = 0;
  // "sentencepiece", "hf-bpe", "hf-bytelevel", "tiktoken", "llama2c".
  virtual std::string_view kind() const = 0;
  // Hex digest identifying the vocabulary and rules (the result store's tokenizer key).
  virtual std::string ContentHash() const = 0;
  // Whether `id` is a special/control token (skipped by Decode when skip_special).
  virtual bool IsSpecial(int32_t id) const { return id == bos_id() || id == eos_id(); }
};

// Loads tokenizer.json, tokenizer.model, *.tiktoken or tok*.bin by file name; for a
// folder, prefers tokenizer.json (with tokenizer_config.json beside it), then
// tokenizer.model, then a single *.tiktoken or tok*.bin.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

// Builds an HF tokenizer from the contents of tokenizer.json and, optionally, of the
// tokenizer_config.json beside it (empty: none). Malformed input is InvalidArgument.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizerFromJson(
    std::string_view tokenizer_json, std::string_view tokenizer_config_json = "");

// Streaming decode that never emits a split UTF-8 sequence: feed ids one at a time and
// get back the complete text that became available.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer* tokenizer) : tokenizer_(tokenizer) {}
  // Returns the newly completed text after appending `id`.
  absl::StatusOr<std::string> Push(int32_t id);
  // Whatever remains (an incomplete trailing sequence decodes as U+FFFD).
  absl::StatusOr<std::string> Finish();

 private:
  // Decodes ids_[begin, end).
  absl::StatusOr<std::string> DecodeRange(size_t begin, size_t end) const;

  const Tokenizer* tokenizer_;
  // ids_ holds the ids from the current context window on (older ones are dropped).
  std::vector<int32_t> ids_;
  size_t emitted_bytes_ = 0;  // total bytes returned so far
  // Window [prefix_offset_, read_offset_) was already emitted and is decoded again as
  // context, so that rules that depend on the previous token (leading-space stripping,
  // byte-fallback runs) give the same text as decoding everything at once.
  size_t prefix_offset_ = 0;
  size_t read_offset_ = 0;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_TOKENIZER_H_
