#include "engine/model/config.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/model/families/config_fields.h"
#include "engine/model/family_table.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

using families::Get;
using families::RequirePositive;
using nlohmann::json;

absl::StatusOr<const FamilySpec*> FamilyOf(const json& config, std::string* model_type) {
  std::string type;
  HG_RETURN_IF_ERROR(Get(config, "model_type", &type));
  if (type.empty()) {
    auto arch = config.find("architectures");
    if (arch != config.end() && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
      const std::string name = (*arch)[0].get<std::string>();
      for (const FamilySpec* spec : AllFamilies()) {
        for (const auto& [prefix, spelled] : spec->architecture_prefixes) {
          if (type.empty() && name.rfind(prefix, 0) == 0) type = spelled;
        }
      }
    }
  }
  *model_type = type;
  if (const FamilySpec* spec = FindFamilyByModelType(type)) return spec;
  if (type == "lra_classifier") {
    return absl::InvalidArgumentError(
        "config.json: model_type 'lra_classifier' is a Long Range Arena classifier, not a "
        "language model; it is loaded by LoadLraClassifier and evaluated by the lra_* tasks");
  }
  return absl::InvalidArgumentError(absl::StrCat("config.json: unsupported model_type '", type,
                                                 "' (supported: ", SupportedModelTypes(), ")"));
}

}  // namespace

std::string_view ModelFamilyName(ModelFamily family) { return FamilySpecOf(family).name; }

int64_t FlaIntermediateSize(int64_t hidden_size, double hidden_ratio) {
  const int64_t base = static_cast<int64_t>(hidden_size * hidden_ratio * 2.0 / 3.0);
  return 256 * ((base + 255) / 256);
}

absl::StatusOr<ModelConfig> ParseModelConfig(const json& config) {
  if (!config.is_object()) {
    return absl::InvalidArgumentError("config.json: top level must be an object");
  }
  ModelConfig c;
  auto family = FamilyOf(config, &c.model_type);
  if (!family.ok()) return family.status();
  const FamilySpec& spec = **family;
  c.family = spec.family;

  HG_RETURN_IF_ERROR(Get(config, "vocab_size", &c.vocab_size));
  HG_RETURN_IF_ERROR(Get(config, "hidden_size", &c.hidden_size));
  HG_RETURN_IF_ERROR(Get(config, "num_hidden_layers", &c.num_layers));
  if (spec.hidden_size_key != nullptr) {
    HG_RETURN_IF_ERROR(Get(config, spec.hidden_size_key, &c.hidden_size));
  }
  if (spec.num_layers_key != nullptr) {
    HG_RETURN_IF_ERROR(Get(config, spec.num_layers_key, &c.num_layers));
  }
  HG_RETURN_IF_ERROR(Get(config, "max_position_embeddings", &c.max_position_embeddings));
  if (c.max_position_embeddings < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: 'max_position_embeddings' must be >= 0, got ", c.max_position_embeddings));
  }
  HG_RETURN_IF_ERROR(RequirePositive("vocab_size", c.vocab_size));
  HG_RETURN_IF_ERROR(RequirePositive("hidden_size", c.hidden_size));
  HG_RETURN_IF_ERROR(RequirePositive("num_hidden_layers", c.num_layers));

  HG_RETURN_IF_ERROR(spec.parse_config(config, &c));
  HG_RETURN_IF_ERROR(Get(config, "tie_word_embeddings", &c.tie_word_embeddings));
  for (auto [key, out] :
       {std::pair{"bos_token_id", &c.bos_token_id}, std::pair{"eos_token_id", &c.eos_token_id}}) {
    auto it = config.find(key);
    if (it != config.end() && it->is_array() && !it->empty() && (*it)[0].is_number_integer()) {
      *out = (*it)[0].get<int32_t>();  // HF allows a list of ids; the first is canonical
    } else {
      HG_RETURN_IF_ERROR(Get(config, key, out));
    }
  }
  if (!(c.norm_eps > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: '", spec.norm_eps_keys, "' must be positive, got ", c.norm_eps));
  }
  // RoPE's inverse frequencies are theta^(-2i/d): theta <= 0 or not finite gives NaN.
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: 'rope_theta' must be a positive number, got ", c.rope_theta));
  }
  return c;
}

}  // namespace hgeval
