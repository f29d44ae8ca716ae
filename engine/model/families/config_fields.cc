#include "engine/model/families/config_fields.h"

#include "engine/util/status_macros.h"

namespace hgeval::families {

// fla configs: norm_eps, or rms_norm_eps before fla 6d0aa569.
absl::Status ReadFlaCommon(const json& config, ModelConfig* c) {
  c->norm_eps = 1e-6;
  HG_RETURN_IF_ERROR(Get(config, "rms_norm_eps", &c->norm_eps));
  HG_RETURN_IF_ERROR(Get(config, "norm_eps", &c->norm_eps));
  c->bos_token_id = 1;
  c->eos_token_id = 2;
  double hidden_ratio = 4;
  HG_RETURN_IF_ERROR(Get(config, "hidden_ratio", &hidden_ratio));
  HG_RETURN_IF_ERROR(Get(config, "intermediate_size", &c->intermediate_size));
  if (c->intermediate_size == 0) {
    c->intermediate_size = FlaIntermediateSize(c->hidden_size, hidden_ratio);
  }
  std::string act = "swish";
  HG_RETURN_IF_ERROR(Get(config, "hidden_act", &act));
  if (act != "swish" && act != "silu") {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: hidden_act '", act, "' is not supported (swish only)"));
  }
  HG_RETURN_IF_ERROR(Get(config, "use_short_conv", &c->use_short_conv));
  HG_RETURN_IF_ERROR(Get(config, "conv_size", &c->conv_size));
  // false: the mixers' output norms have no weight (and the checkpoint no such tensor).
  bool affine = true;
  HG_RETURN_IF_ERROR(Get(config, "elementwise_affine", &affine));
  if (!affine) {
    return absl::UnimplementedError(
        "config.json: 'elementwise_affine' false (norms without weights) is not supported");
  }
  auto attn = config.find("attn");
  if (attn != config.end() && !attn->is_null()) {
    return absl::UnimplementedError("config.json: hybrid 'attn' layers are not supported");
  }
  auto attnres = config.find("attnres_block_size");
  if (attnres != config.end() && !attnres->is_null()) {
    return absl::UnimplementedError("config.json: 'attnres_block_size' is not supported");
  }
  return absl::OkStatus();
}

}  // namespace hgeval::families
