// Constructors of the concrete tokenizers (internal to engine/tokenizer; LoadTokenizer
// dispatches to them).
#ifndef HGEVAL_ENGINE_TOKENIZER_TOKENIZER_FACTORIES_H_
#define HGEVAL_ENGINE_TOKENIZER_TOKENIZER_FACTORIES_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "engine/tokenizer/tokenizer.h"

namespace hgeval {

// tokenizer.model bytes; config_json: tokenizer_config.json contents or "".
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeSentencePieceTokenizer(std::string_view model_bytes,
                                                                      std::string_view config_json);

// *.tiktoken contents; the file's base name picks the split pattern and special tokens.
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeTiktokenTokenizer(std::string_view contents,
                                                                 std::string_view base_name);

// llama2.c tokenizer .bin contents.
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeLlama2cTokenizer(std::string_view contents);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_TOKENIZER_FACTORIES_H_
