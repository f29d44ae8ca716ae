// GLA (fla's gated linear attention, model_type gla): its table entry
// (engine/model/family_table.h).
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/model/families/config_fields.h"
#include "engine/model/family_table.h"
#include "engine/util/status_macros.h"

namespace hgeval::families {
namespace {

absl::Status ParseConfig(const json& config, ModelConfig* out) {
  ModelConfig& c = *out;
  HG_RETURN_IF_ERROR(ReadFlaCommon(config, &c));
  c.num_heads = 4;
  HG_RETURN_IF_ERROR(Get(config, "num_heads", &c.num_heads));
  HG_RETURN_IF_ERROR(Get(config, "num_kv_heads", &c.num_kv_heads));
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  HG_RETURN_IF_ERROR(Get(config, "expand_k", &c.expand_k));
  HG_RETURN_IF_ERROR(Get(config, "expand_v", &c.expand_v));
  HG_RETURN_IF_ERROR(Get(config, "use_output_gate", &c.use_output_gate));
  HG_RETURN_IF_ERROR(Get(config, "feature_map", &c.feature_map));
  auto clamp = config.find("clamp_min");
  if (clamp != config.end() && !clamp->is_null()) {
    if (!clamp->is_number()) {
      return absl::InvalidArgumentError("config.json: 'clamp_min' must be a number");
    }
    c.clamp_min = clamp->get<double>();
  }
  HG_RETURN_IF_ERROR(RequirePositive("num_heads", c.num_heads));
  HG_RETURN_IF_ERROR(RequirePositive("num_kv_heads", c.num_kv_heads));
  if (c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("config.json: 'num_heads' ", c.num_heads,
                                                   " is not a multiple of 'num_kv_heads' ",
                                                   c.num_kv_heads));
  }
  for (auto [key, ratio] : {std::pair{"expand_k", c.expand_k}, std::pair{"expand_v", c.expand_v}}) {
    // Upstream truncates hidden_size * ratio; hgeval takes only exact widths.
    const double width = c.hidden_size * ratio;
    if (!(width > 0) || width != std::floor(width) ||
        static_cast<int64_t>(width) % c.num_heads != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: hidden_size ", c.hidden_size, " x '", key, "' ", ratio,
                       " must be a whole width divisible into 'num_heads' ", c.num_heads));
    }
  }
  return absl::OkStatus();
}

// Per layer: one dk x dv state per kv head (query heads that share a kv head share its
// state) and, with short convolutions, the q, k and v windows.
int64_t StateValuesPerSequence(const ModelConfig& c) {
  const int64_t key_dim = static_cast<int64_t>(c.hidden_size * c.expand_k);
  const int64_t value_dim = static_cast<int64_t>(c.hidden_size * c.expand_v);
  const int64_t heads = c.num_heads;
  const int64_t kv_heads = c.num_kv_heads > 0 ? c.num_kv_heads : heads;
  const int64_t group = heads / kv_heads;
  int64_t layer = kv_heads * (key_dim / heads) * (value_dim / heads);
  if (c.use_short_conv) {
    layer += (c.conv_size - 1) * (key_dim + key_dim / group + value_dim / group);
  }
  return c.num_layers * layer;
}

}  // namespace

const FamilySpec& Gla() {
  static const FamilySpec spec{
      .family = ModelFamily::kGla,
      .name = "gla",
      .model_types = {"gla"},
      .architecture_prefixes = {{"GLA", "gla"}},
      .parse_config = ParseConfig,
      .state_values_per_sequence = StateValuesPerSequence,
  };
  return spec;
}

}  // namespace hgeval::families
