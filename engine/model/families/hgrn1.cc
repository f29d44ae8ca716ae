// HGRN (fla's HGRN, model_type hgrn): its table entry (engine/model/family_table.h).
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
  c.expand_ratio = 1;
  HG_RETURN_IF_ERROR(Get(config, "expand_ratio", &c.expand_ratio));
  HG_RETURN_IF_ERROR(RequirePositive("expand_ratio", c.expand_ratio));
  HG_RETURN_IF_ERROR(Get(config, "use_lower_bound", &c.use_lower_bound));
  if (c.use_lower_bound && c.expand_ratio != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: HGRN 'use_lower_bound' needs 'expand_ratio' 1, got ", c.expand_ratio));
  }
  return absl::OkStatus();
}

// Per layer: the E = D * expand_ratio hidden state and, with short convolutions, the i and
// f windows of (conv_size - 1) x E each.
int64_t StateValuesPerSequence(const ModelConfig& c) {
  const int64_t e = c.hidden_size * c.expand_ratio;
  int64_t layer = e;
  if (c.use_short_conv) layer += 2 * (c.conv_size - 1) * e;
  return c.num_layers * layer;
}

}  // namespace

const FamilySpec& Hgrn1() {
  static const FamilySpec spec{
      .family = ModelFamily::kHgrn,
      .name = "hgrn",
      .model_types = {"hgrn"},
      .architecture_prefixes = {{"HGRN", "hgrn"}},
      .parse_config = ParseConfig,
      .state_values_per_sequence = StateValuesPerSequence,
  };
  return spec;
}

}  // namespace hgeval::families
