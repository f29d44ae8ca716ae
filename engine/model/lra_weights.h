// The weights of an LRA classifier (engine/model/lra_classifier.h) read from a checkpoint
// into host memory, checked against the config: what both backends build from (the CPU
// runs on them as they are, CUDA uploads them). Tensor names: docs/lra.md.
#ifndef HGEVAL_ENGINE_MODEL_LRA_WEIGHTS_H_
#define HGEVAL_ENGINE_MODEL_LRA_WEIGHTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/lra_classifier.h"

namespace hgeval {

// nn.Linear: weight [out, in], bias [out] or empty when the checkpoint has none.
struct LraLinearWeights {
  HostTensor weight;
  std::vector<float> bias;

  int64_t out() const { return weight.shape[0]; }
  int64_t in() const { return weight.shape[1]; }
  int64_t num_parameters() const { return weight.numel() + static_cast<int64_t>(bias.size()); }
};

// LayerNorm (weight, bias) or eval-mode BatchNorm (also running_mean, running_var, none
// negative) over the last axis.
struct LraNormWeights {
  bool batch = false;
  float eps = 1e-5f;
  std::vector<float> weight, bias, running_mean, running_var;

  int64_t width() const { return static_cast<int64_t>(weight.size()); }
  // The affine parameters (running statistics are buffers, not parameters).
  int64_t num_parameters() const { return 2 * width(); }
};

// HGRN2: in_proj [3d, d] (input | output gate | forget gate), the optional LayerNorm(d)
// before out_proj [d, d].
struct LraHgrn2MixerWeights {
  LraLinearWeights in_proj, out_proj;
  bool has_norm = false;
  LraNormWeights norm;
};

// HGRN1: input_proj [2d, d], lambda_proj [d, d], gate [2d, d], LayerNorm(2d), out_proj
// [d, 2d], the rotation angles of the forward and the reverse scans [d].
struct LraHgrn1MixerWeights {
  LraLinearWeights input_proj, lambda_proj, gate, out_proj;
  LraNormWeights norm;
  std::vector<float> theta_forward, theta_reverse;
};

struct LraLayerWeights {
  LraNormWeights mixer_norm;
  // The forget gate's lower bound per channel [d]; empty: none (layer 0, or
  // use_lower_bound false).
  std::vector<float> lower_bound;
  LraHgrn2MixerWeights hgrn2;  // config.mixer == kHgrn2
  LraHgrn1MixerWeights hgrn1;  // config.mixer == kHgrn1
  LraNormWeights glu_norm;
  LraLinearWeights l1, l2, l3;  // GLU: l3(silu(l1 x) * l2 x)
};

struct LraClassifierWeights {
  HostTensor embedding;            // [vocab_size, d] (embedding encoder)
  LraLinearWeights input_encoder;  // [d, input_channels] (linear encoder)
  std::vector<LraLayerWeights> layers;
  LraNormWeights final_norm;
  LraLinearWeights head;                // [classes, d] (linear head)
  LraLinearWeights head_fc1, head_fc2;  // [d, 4d], [classes, d] (retrieval head)
  int64_t num_parameters = 0;
};

// Reads every tensor the config calls for with its exact shape; NotFound / InvalidArgument
// naming the tensor otherwise, and InvalidArgument when the checkpoint holds more layers
// than config.num_layers.
absl::StatusOr<LraClassifierWeights> ReadLraClassifierWeights(const Checkpoint& checkpoint,
                                                              const LraClassifierConfig& config);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_LRA_WEIGHTS_H_
