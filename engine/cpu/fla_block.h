// The model skeleton shared by fla's HGRN2, HGRN and GLA checkpoints (specs/models.md §1):
// embeddings; per layer attn_norm -> token mixer -> fused add+norm (mlp_norm) -> GatedMLP
// -> add; final norm; lm_head. Each family supplies only its token mixer. Also the pieces
// other recurrent families reuse: the per-sequence recurrent state and ShortConvolution.
#ifndef HGEVAL_ENGINE_CPU_FLA_BLOCK_H_
#define HGEVAL_ENGINE_CPU_FLA_BLOCK_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/config.h"
#include "engine/model/lower_bounds.h"
#include "engine/model/model.h"

namespace hgeval::cpu {

// One layer's recurrent state for one sequence, fp32 like fla's recurrent_state (measured
// on the golden fixtures, whose references run the scans in float64: fp32 state keeps
// every logit within 1e-5, the same as a double state, at half the snapshot memory).
struct MixerState {
  std::vector<float> recurrent;
  // One window per short convolution: the last (kernel - 1) inputs, [kernel-1, channels]
  // row-major, oldest first (zeros at the start of a sequence).
  std::vector<std::vector<float>> conv;

  size_t bytes() const;
};

// A sequence's state in a recurrent model: position plus one MixerState per layer.
// Fixed size; Clone is a plain deep copy.
class RecurrentSequenceState final : public SequenceState {
 public:
  RecurrentSequenceState(const void* owner, std::vector<MixerState> layers)
      : owner_(owner), layers_(std::move(layers)) {}

  int64_t position() const override { return position_; }
  std::unique_ptr<SequenceState> Clone() const override {
    return std::make_unique<RecurrentSequenceState>(*this);
  }
  size_t bytes() const override;

  // The model that created the state (Forward rejects states of another model).
  const void* owner() const { return owner_; }
  MixerState& layer(int64_t l) { return layers_[static_cast<size_t>(l)]; }
  void Advance(int64_t tokens) { position_ += tokens; }

 private:
  const void* owner_;
  int64_t position_ = 0;
  std::vector<MixerState> layers_;
};

// fla ShortConvolution: a depthwise causal Conv1d over time, weight [C, 1, K], optional
// bias [C], optional silu. The window of the last K-1 inputs carries across calls.
class ShortConv {
 public:
  // Reads `<prefix>.weight` (and `<prefix>.bias` when present).
  static absl::StatusOr<ShortConv> Read(const Checkpoint& checkpoint, const std::string& prefix,
                                        int64_t channels, int64_t kernel, bool silu);

  int64_t channels() const { return channels_; }
  int64_t kernel() const { return kernel_; }
  int64_t num_parameters() const;
  // A zero window for a new sequence.
  std::vector<float> NewWindow() const;
  // x: [T, C], replaced by the convolution's output; `window` is advanced past x.
  void Apply(float* x, int64_t t_len, std::vector<float>* window) const;

 private:
  int64_t channels_ = 0;
  int64_t kernel_ = 0;
  bool silu_ = false;
  std::vector<float> weight_;  // [C, K]
  std::vector<float> bias_;    // [C] or empty
};

// A mixer's state for a new sequence: `recurrent_floats` zeros and a zero window per
// short convolution.
MixerState NewMixerState(int64_t recurrent_floats, const std::vector<ShortConv>& convs);
// The parameters of a mixer's short convolutions.
int64_t ShortConvParameters(const std::vector<ShortConv>& convs);

// A token mixer (the "attn" sublayer of an fla block) over one sequence.
class TokenMixer {
 public:
  virtual ~TokenMixer() = default;
  virtual MixerState NewState() const = 0;
  // x: [T, D] (the attn_norm output); out: [T, D]. Advances `state` past the T tokens.
  virtual void Forward(const float* x, int64_t t_len, MixerState* state, float* out) const = 0;
  virtual int64_t num_parameters() const = 0;
};

// fla's per-layer lower bounds: the rule is the model's (engine/model/lower_bounds.h).
using ::hgeval::ReadLowerBounds;

// HGRN / HGRN2's forget gate for the pre-activation f and the layer's bound lb (0: none),
// in double: log_gate = log(lb + (1 - lb)·σ(f)) (fla: logaddexp(log lb, log1p(-lb) +
// logsigmoid(f)); logsigmoid(f) when lb = 0) and one_minus_gate = 1 - gate = (1 - lb)·σ(-f),
// computed without cancellation when the gate is near 1.
struct ForgetGate {
  double log_gate;
  double one_minus_gate;
};
inline ForgetGate LowerBoundedForgetGate(double f, double lb) {
  const double e = std::exp(-std::abs(f));  // in (0, 1]: no overflow
  const double sig = f >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
  const double sig_neg = f >= 0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
  const double log_sig = std::min(f, 0.0) - std::log1p(e);
  return {lb == 0.0 ? log_sig : std::log(lb + (1.0 - lb) * sig), (1.0 - lb) * sig_neg};
}

// Builds an fla-skeleton model around `mixers` (one per layer): reads the embeddings, the
// block norms and MLPs (split or legacy fused), the final norm and lm_head (tied or not).
// `extra_parameters` counts family weights held outside the mixers (lower bounds).
absl::StatusOr<std::unique_ptr<Model>> BuildFlaModel(
    const Checkpoint& checkpoint, const ModelConfig& config,
    std::vector<std::unique_ptr<TokenMixer>> mixers, int64_t extra_parameters);

// HGRN and HGRN2: reads the lower bounds (when config.use_lower_bound) and one mixer per
// layer through `read_mixer(layer, bound)`, where layer 0 gets no bound (an empty
// vector), then builds the fla-skeleton model around them.
template <typename ReadMixer>
absl::StatusOr<std::unique_ptr<Model>> BuildLowerBoundedFlaModel(const Checkpoint& checkpoint,
                                                                 const ModelConfig& config,
                                                                 ReadMixer read_mixer) {
  std::vector<std::vector<float>> bounds;
  int64_t extra = 0;
  if (config.use_lower_bound) {
    auto read =
        ReadLowerBounds(checkpoint, "model.lower_bounds", config.num_layers, config.hidden_size);
    if (!read.ok()) return read.status();
    bounds = *std::move(read);
    extra = config.num_layers * config.hidden_size;
  }
  std::vector<std::unique_ptr<TokenMixer>> mixers;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    std::vector<float> bound = (bounds.empty() || l == 0) ? std::vector<float>() : bounds[l];
    auto mixer = read_mixer(l, std::move(bound));
    if (!mixer.ok()) return mixer.status();
    mixers.push_back(*std::move(mixer));
  }
  return BuildFlaModel(checkpoint, config, std::move(mixers), extra);
}

// Reads a float tensor with an exact expected shape.
absl::StatusOr<HostTensor> ReadTensor(const Checkpoint& checkpoint, const std::string& name,
                                      std::vector<int64_t> shape);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_FLA_BLOCK_H_
