// Mamba (transformers' mamba-1, model_type mamba): its table entry (engine/model/family_table.h).
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
  c.norm_eps = 1e-5;
  HG_RETURN_IF_ERROR(Get(config, "layer_norm_epsilon", &c.norm_eps));
  c.tie_word_embeddings = true;  // transformers' default
  c.bos_token_id = 0;
  c.eos_token_id = 0;
  HG_RETURN_IF_ERROR(Get(config, "state_size", &c.state_size));
  int64_t expand = 2;
  HG_RETURN_IF_ERROR(Get(config, "expand", &expand));
  c.mamba_inner = expand * c.hidden_size;
  HG_RETURN_IF_ERROR(Get(config, "intermediate_size", &c.mamba_inner));
  c.intermediate_size = c.mamba_inner;
  auto rank = config.find("time_step_rank");
  if (rank == config.end() || rank->is_null() ||
      (rank->is_string() && rank->get<std::string>() == "auto")) {
    c.time_step_rank = (c.hidden_size + 15) / 16;
  } else {
    HG_RETURN_IF_ERROR(Get(config, "time_step_rank", &c.time_step_rank));
  }
  HG_RETURN_IF_ERROR(Get(config, "conv_kernel", &c.conv_kernel));
  HG_RETURN_IF_ERROR(Get(config, "use_bias", &c.use_bias));
  HG_RETURN_IF_ERROR(Get(config, "use_conv_bias", &c.use_conv_bias));
  HG_RETURN_IF_ERROR(Get(config, "residual_in_fp32", &c.residual_in_fp32));
  std::string act = "silu";
  HG_RETURN_IF_ERROR(Get(config, "hidden_act", &act));
  if (act != "silu") {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: hidden_act '", act, "' is not supported (silu only)"));
  }
  HG_RETURN_IF_ERROR(RequirePositive("state_size", c.state_size));
  HG_RETURN_IF_ERROR(RequirePositive("time_step_rank", c.time_step_rank));
  HG_RETURN_IF_ERROR(RequirePositive("conv_kernel", c.conv_kernel));
  return absl::OkStatus();
}

BlockTensorNames TensorNames(const Checkpoint& checkpoint, const ModelConfig&) {
  // transformers' load hook also accepts the older `backbone.embedding.` name.
  const bool legacy =
      !checkpoint.Has("backbone.embeddings.weight") && checkpoint.Has("backbone.embedding.weight");
  return {legacy ? "backbone.embedding.weight" : "backbone.embeddings.weight",
          "backbone.norm_f.weight",
          "lm_head.weight",
          "backbone.layers.",
          "norm",
          "",
          "mixer"};
}

// Per layer: the causal conv's last conv_kernel - 1 inputs and the SSM state, E x N.
int64_t StateValuesPerSequence(const ModelConfig& c) {
  return c.num_layers * c.mamba_inner * (c.conv_kernel - 1 + c.state_size);
}

}  // namespace

const FamilySpec& Mamba() {
  static const FamilySpec spec{
      .family = ModelFamily::kMamba,
      .name = "mamba",
      .model_types = {"mamba"},
      .architecture_prefixes = {{"Mamba", "mamba"}},
      .norm_eps_keys = "layer_norm_epsilon",
      .parse_config = ParseConfig,
      .tensor_names = TensorNames,
      .state_values_per_sequence = StateValuesPerSequence,
  };
  return spec;
}

}  // namespace hgeval::families
