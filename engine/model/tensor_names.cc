#include "engine/model/tensor_names.h"

#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"

namespace hgeval {

std::string BlockTensorNames::LayerPrefix(int64_t layer) const {
  return absl::StrCat(layers, layer, ".");
}
std::string BlockTensorNames::MixerPrefix(int64_t layer) const {
  return absl::StrCat(layers, layer, ".", mixer, ".");
}
std::string BlockTensorNames::Norm1Weight(int64_t layer) const {
  return absl::StrCat(layers, layer, ".", norm1, ".weight");
}
std::string BlockTensorNames::Norm2Weight(int64_t layer) const {
  return absl::StrCat(layers, layer, ".", norm2, ".weight");
}

BlockTensorNames BlockTensorNamesFor(const Checkpoint& checkpoint, const ModelConfig& config) {
  switch (config.family) {
    case ModelFamily::kMamba: {
      // transformers' load hook also accepts the older `backbone.embedding.` name.
      const bool legacy = !checkpoint.Has("backbone.embeddings.weight") &&
                          checkpoint.Has("backbone.embedding.weight");
      return {legacy ? "backbone.embedding.weight" : "backbone.embeddings.weight",
              "backbone.norm_f.weight",
              "lm_head.weight",
              "backbone.layers.",
              "norm",
              "",
              "mixer"};
    }
    case ModelFamily::kTnl:  // TransNormerLLM's names; its norms have no weights
      return {"model.embed_tokens.weight",
              "",
              "lm_head.weight",
              "model.layers.",
              "",
              "",
              "token_mixer"};
    case ModelFamily::kLlama:
      if (!config.fla_key_names) {
        return {"model.embed_tokens.weight",
                "model.norm.weight",
                "lm_head.weight",
                "model.layers.",
                "input_layernorm",
                "post_attention_layernorm",
                "self_attn"};
      }
      break;  // fla's LLaMA ("transformer") uses the fla names below
    case ModelFamily::kHgrn2:
    case ModelFamily::kHgrn:
    case ModelFamily::kGla:
      break;
  }
  return {"model.embeddings.weight",
          "model.norm.weight",
          "lm_head.weight",
          "model.layers.",
          "attn_norm",
          "mlp_norm",
          "attn"};
}

absl::StatusOr<GatedMlpWeights> ReadBlockMlp(const Checkpoint& checkpoint,
                                             const ModelConfig& config, int64_t layer) {
  const int64_t d = config.hidden_size, inter = config.intermediate_size;
  const std::string prefix = BlockTensorNamesFor(checkpoint, config).LayerPrefix(layer);
  if (config.family != ModelFamily::kTnl) {
    return ReadGatedMlp(checkpoint, prefix + "mlp", inter, d);
  }
  GatedMlpWeights mlp;
  HG_ASSIGN_OR_RETURN(mlp.gate,
                      checkpoint.ReadFloat(prefix + "channel_mixer.l1.weight", {inter, d}));
  HG_ASSIGN_OR_RETURN(mlp.up, checkpoint.ReadFloat(prefix + "channel_mixer.l2.weight", {inter, d}));
  HG_ASSIGN_OR_RETURN(mlp.down,
                      checkpoint.ReadFloat(prefix + "channel_mixer.l3.weight", {d, inter}));
  return mlp;
}

}  // namespace hgeval
