#include "engine/tokenizer/tokenizer_config.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace hgeval {
namespace {

using nlohmann::json;

// bos_token/eos_token are either a string or an AddedToken object {"content": ...}.
std::optional<std::string> TokenText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) {
    const auto it = value.find("content");
    if (it != value.end() && it->is_string()) return it->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<TokenizerConfig> ParseTokenizerConfig(std::string_view text) {
  TokenizerConfig config;
  if (text.empty()) return config;
  try {
    const json root = json::parse(text);
    if (!root.is_object()) {
      return absl::InvalidArgumentError("tokenizer_config.json: top level is not an object");
    }
    if (auto it = root.find("add_bos_token"); it != root.end() && it->is_boolean()) {
      config.add_bos_token = it->get<bool>();
    }
    if (auto it = root.find("add_eos_token"); it != root.end() && it->is_boolean()) {
      config.add_eos_token = it->get<bool>();
    }
    if (auto it = root.find("bos_token"); it != root.end()) config.bos_token = TokenText(*it);
    if (auto it = root.find("eos_token"); it != root.end()) config.eos_token = TokenText(*it);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("tokenizer_config.json: ", e.what()));
  }
  return config;
}

}  // namespace hgeval
