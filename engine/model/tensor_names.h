// Where a family keeps its block skeleton in a checkpoint (upstream key names): the
// embedding, the norms around the token mixer, the MLP, the final norm and the head.
// The model's, not a backend's: both backends read the same names.
#ifndef HGEVAL_ENGINE_MODEL_TENSOR_NAMES_H_
#define HGEVAL_ENGINE_MODEL_TENSOR_NAMES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/config.h"

namespace hgeval {

struct BlockTensorNames {
  std::string embed;       // [V, D]
  std::string final_norm;  // [D]; empty: a norm without weight (TNL's SimpleRMSNorm)
  std::string head;        // [V, D]; may be absent when the embeddings are tied
  // Layer l's tensors are named LayerPrefix(l) + "<module>.<tensor>".
  std::string layers;  // "model.layers."
  // Modules inside a layer: the norm before the mixer, the norm before the MLP (empty:
  // no weight, TNL; or no MLP, Mamba), the token mixer.
  std::string norm1, norm2, mixer;

  std::string LayerPrefix(int64_t layer) const;  // "model.layers.3."
  std::string MixerPrefix(int64_t layer) const;  // "model.layers.3.attn."
  std::string Norm1Weight(int64_t layer) const;  // "model.layers.3.attn_norm.weight"
  std::string Norm2Weight(int64_t layer) const;
};

// fla's names (model.embeddings, layers' attn_norm / attn / mlp_norm): HGRN2, HGRN, GLA
// and fla's LLaMA.
BlockTensorNames FlaBlockTensorNames();

// The names of `config`'s family (its FamilySpec::tensor_names); `checkpoint` settles legacy
// spellings (Mamba's `backbone.embedding.weight`).
BlockTensorNames BlockTensorNamesFor(const Checkpoint& checkpoint, const ModelConfig& config);

// Layer `layer`'s MLP: fla's and LLaMA's SwiGLU `mlp.{gate,up,down}_proj` (or fla's legacy
// fused gate_proj), or the family's own (FamilySpec::read_mlp: TNL's GLU); shapes
// [I, D], [I, D], [D, I] checked. Not for Mamba, whose blocks have no MLP.
absl::StatusOr<GatedMlpWeights> ReadBlockMlp(const Checkpoint& checkpoint,
                                             const ModelConfig& config, int64_t layer);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_TENSOR_NAMES_H_
