#include "engine/model/tensor_names.h"

#include "absl/strings/str_cat.h"
#include "engine/model/family_table.h"

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

BlockTensorNames FlaBlockTensorNames() {
  return {"model.embeddings.weight",
          "model.norm.weight",
          "lm_head.weight",
          "model.layers.",
          "attn_norm",
          "mlp_norm",
          "attn"};
}

BlockTensorNames BlockTensorNamesFor(const Checkpoint& checkpoint, const ModelConfig& config) {
  const FamilySpec& spec = FamilySpecOf(config.family);
  return spec.tensor_names != nullptr ? spec.tensor_names(checkpoint, config)
                                      : FlaBlockTensorNames();
}

absl::StatusOr<GatedMlpWeights> ReadBlockMlp(const Checkpoint& checkpoint,
                                             const ModelConfig& config, int64_t layer) {
  const FamilySpec& spec = FamilySpecOf(config.family);
  const std::string prefix = BlockTensorNamesFor(checkpoint, config).LayerPrefix(layer);
  if (spec.read_mlp != nullptr) return spec.read_mlp(checkpoint, config, prefix);
  return ReadGatedMlp(checkpoint, prefix + "mlp", config.intermediate_size, config.hidden_size);
}

}  // namespace hgeval
