// HGRN2 (fla's HGRN2, model_type hgrn2): its table entry (engine/model/family_table.h).
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
  // fla's HGRN2Config: expand_ratio defaults to 128 when the key is absent; null
  // means "from num_heads".
  c.expand_ratio = config.contains("expand_ratio") ? 0 : 128;
  HG_RETURN_IF_ERROR(Get(config, "expand_ratio", &c.expand_ratio));
  HG_RETURN_IF_ERROR(Get(config, "num_heads", &c.num_heads));
  // The layer uses H = D / expand_ratio whenever expand_ratio is set.
  if (c.expand_ratio > 0) {
    c.num_heads = c.hidden_size / c.expand_ratio;
  } else if (c.num_heads > 0) {
    c.expand_ratio = c.hidden_size / c.num_heads;
  } else {
    c.expand_ratio = 128;
    c.num_heads = c.hidden_size / 128;
  }
  if (c.num_heads <= 0 || c.num_heads * c.expand_ratio != c.hidden_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: hidden_size ", c.hidden_size, " is not divisible by 'expand_ratio' ",
        c.expand_ratio, " (or 'num_heads' ", c.num_heads, ")"));
  }
  HG_RETURN_IF_ERROR(Get(config, "use_lower_bound", &c.use_lower_bound));
  return absl::OkStatus();
}

// Per layer: H heads of K x V state (K = expand_ratio, V = D / H) and, with short
// convolutions, the q, f and i windows of (conv_size - 1) x D each.
int64_t StateValuesPerSequence(const ModelConfig& c) {
  const int64_t d = c.hidden_size;
  int64_t layer = c.num_heads * c.expand_ratio * (d / c.num_heads);
  if (c.use_short_conv) layer += 3 * (c.conv_size - 1) * d;
  return c.num_layers * layer;
}

}  // namespace

const FamilySpec& Hgrn2() {
  static const FamilySpec spec{
      .family = ModelFamily::kHgrn2,
      .name = "hgrn2",
      .model_types = {"hgrn2"},
      .architecture_prefixes = {{"HGRN2", "hgrn2"}},
      .parse_config = ParseConfig,
      .state_values_per_sequence = StateValuesPerSequence,
  };
  return spec;
}

}  // namespace hgeval::families
