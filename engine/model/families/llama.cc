// LLaMA (transformers' llama, and fla's transformer renamed on load): its table entry
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
  if (c.model_type == "transformer") {
    c.fla_key_names = true;
    HG_RETURN_IF_ERROR(ReadFlaCommon(config, &c));
    c.num_heads = 32;
    HG_RETURN_IF_ERROR(Get(config, "num_heads", &c.num_heads));
    HG_RETURN_IF_ERROR(Get(config, "num_kv_heads", &c.num_kv_heads));
    bool qkv_bias = false, qk_norm = false;
    HG_RETURN_IF_ERROR(Get(config, "qkv_bias", &qkv_bias));
    HG_RETURN_IF_ERROR(Get(config, "attention_bias", &qkv_bias));
    HG_RETURN_IF_ERROR(Get(config, "qk_norm", &qk_norm));
    auto window = config.find("window_size");
    if (qkv_bias || qk_norm || (window != config.end() && !window->is_null())) {
      return absl::UnimplementedError(
          "config.json: fla transformer with qkv_bias, qk_norm or window_size is not "
          "supported");
    }
  } else {
    c.norm_eps = 1e-6;
    HG_RETURN_IF_ERROR(Get(config, "rms_norm_eps", &c.norm_eps));
    HG_RETURN_IF_ERROR(Get(config, "num_attention_heads", &c.num_heads));
    HG_RETURN_IF_ERROR(Get(config, "num_key_value_heads", &c.num_kv_heads));
    HG_RETURN_IF_ERROR(Get(config, "intermediate_size", &c.intermediate_size));
    HG_RETURN_IF_ERROR(Get(config, "attention_bias", &c.attention_bias));
    bool mlp_bias = false;
    HG_RETURN_IF_ERROR(Get(config, "mlp_bias", &mlp_bias));
    if (c.attention_bias || mlp_bias) {
      return absl::UnimplementedError(absl::StrCat("config.json: LLaMA '",
                                                   c.attention_bias ? "attention_bias" : "mlp_bias",
                                                   "' true is not supported"));
    }
    std::string act = "silu";
    HG_RETURN_IF_ERROR(Get(config, "hidden_act", &act));
    if (act != "silu") {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: hidden_act '", act, "' is not supported (silu only)"));
    }
    c.bos_token_id = 1;
    c.eos_token_id = 2;
  }
  HG_RETURN_IF_ERROR(RequirePositive("num_attention_heads", c.num_heads));
  if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
  HG_RETURN_IF_ERROR(Get(config, "head_dim", &c.head_dim));
  if (c.head_dim == 0) c.head_dim = c.hidden_size / c.num_heads;
  HG_RETURN_IF_ERROR(RequirePositive("intermediate_size", c.intermediate_size));
  if (c.num_heads % c.num_kv_heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: 'num_attention_heads' ", c.num_heads,
                     " is not a multiple of 'num_key_value_heads' ", c.num_kv_heads));
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) {  // RoPE rotates pairs
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: 'head_dim' must be positive and even, got ", c.head_dim));
  }
  HG_RETURN_IF_ERROR(Get(config, "rope_theta", &c.rope_theta));
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    auto rope = config.find(key);
    if (rope == config.end() || rope->is_null()) continue;
    if (!rope->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: '", key, "' must be an object"));
    }
    HG_RETURN_IF_ERROR(Get(*rope, "rope_theta", &c.rope_theta));
    std::string type = "default";
    HG_RETURN_IF_ERROR(Get(*rope, "rope_type", &type));
    HG_RETURN_IF_ERROR(Get(*rope, "type", &type));
    if (type != "default") {
      return absl::UnimplementedError(
          absl::StrCat("config.json: rope_type '", type, "' is not supported"));
    }
  }
  return absl::OkStatus();
}

BlockTensorNames TensorNames(const Checkpoint&, const ModelConfig& c) {
  if (c.fla_key_names) return FlaBlockTensorNames();  // fla's LLaMA ("transformer")
  return {
      "model.embed_tokens.weight", "model.norm.weight",        "lm_head.weight", "model.layers.",
      "input_layernorm",           "post_attention_layernorm", "self_attn"};
}

// The KV cache: a key and a value row (kv heads x head_dim) per layer and token.
int64_t StateValuesPerToken(const ModelConfig& c) {
  return 2 * c.num_layers * c.num_kv_heads * c.head_dim;
}

}  // namespace

const FamilySpec& Llama() {
  static const FamilySpec spec{
      .family = ModelFamily::kLlama,
      .name = "llama",
      .model_types = {"llama", "transformer"},
      .architecture_prefixes = {{"Llama", "llama"}, {"Transformer", "transformer"}},
      .norm_eps_keys = "rms_norm_eps' / 'norm_eps",
      .parse_config = ParseConfig,
      .tensor_names = TensorNames,
      .state_values_per_token = StateValuesPerToken,
      .recurrent = false,
      .has_kv_cache = true,
  };
  return spec;
}

}  // namespace hgeval::families
