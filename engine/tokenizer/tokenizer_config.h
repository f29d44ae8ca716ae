// What tokenizer_config.json (transformers) says about special tokens.
#ifndef HGEVAL_ENGINE_TOKENIZER_TOKENIZER_CONFIG_H_
#define HGEVAL_ENGINE_TOKENIZER_TOKENIZER_CONFIG_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace hgeval {

struct TokenizerConfig {
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<std::string> bos_token;  // token text, e.g. "<s>"
  std::optional<std::string> eos_token;
};

// Parses the contents of tokenizer_config.json; empty input gives an empty config.
absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view json);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_TOKENIZER_CONFIG_H_
