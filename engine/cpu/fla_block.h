// The pieces fla's HGRN2, HGRN and GLA token mixers share (specs/models.md §1; their block
// is the CPU skeleton's default layout, cpu_model.h): ShortConvolution (Mamba's causal conv
// too), the lower-bounded forget gate, and reading the lower bounds with the mixers.
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
#include "engine/cpu/cpu_model.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/config.h"
#include "engine/model/lower_bounds.h"
#include "engine/model/model.h"

namespace hgeval::cpu {

// fla ShortConvolution: a depthwise causal Conv1d over time, weight [C, 1, K], optional
// bias [C], optional silu. The window of the last K-1 inputs carries across calls.
class ShortConv {
 public:
  // Reads `<prefix>.weight` (and `<prefix>.bias` when present).
  static absl::StatusOr<ShortConv> Read(const Checkpoint& checkpoint, const std::string& prefix,
                                        int64_t channels, int64_t kernel, bool silu);
  // From tensors read by the caller: weight [C, 1, K], bias [C] or empty.
  ShortConv(HostTensor weight, HostTensor bias, bool silu);
  ShortConv() = default;  // no channels, until assigned

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

// HGRN and HGRN2: reads the lower bounds (when config.use_lower_bound) and one mixer per
// layer through `read_mixer(layer, bound)`, where layer 0 gets no bound (an empty
// vector), then builds the CPU skeleton (fla's layout) around them.
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
  CpuModelParts parts;
  parts.mixers = std::move(mixers);
  parts.extra_parameters = extra;
  return MakeCpuModel(checkpoint, config, std::move(parts));
}

// Reads a float tensor with an exact expected shape.
absl::StatusOr<HostTensor> ReadTensor(const Checkpoint& checkpoint, const std::string& name,
                                      std::vector<int64_t> shape);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_FLA_BLOCK_H_
