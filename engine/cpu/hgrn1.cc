// HGRN (HGRN1; fla models/hgrn, layers/hgrn.py; specs/models.md §3) on the CPU, fp32 with
// an fp32 elementwise recurrence.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/fla_block.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

class HgrnMixer final : public TokenMixer {
 public:
  static absl::StatusOr<std::unique_ptr<HgrnMixer>> Read(const Checkpoint& checkpoint,
                                                         const ModelConfig& config, int64_t layer,
                                                         std::vector<float> lower_bound) {
    auto mixer = std::unique_ptr<HgrnMixer>(new HgrnMixer());
    const int64_t d = config.hidden_size;
    const int64_t e = d * config.expand_ratio;
    mixer->d_ = d;
    mixer->e_ = e;
    mixer->eps_ = static_cast<float>(config.norm_eps);
    mixer->lower_bound_ = std::move(lower_bound);
    const std::string p = BlockTensorNamesFor(checkpoint, config).MixerPrefix(layer);
    HG_ASSIGN_OR_RETURN(mixer->i_proj_, ReadTensor(checkpoint, p + "i_proj.weight", {e, d}));
    HG_ASSIGN_OR_RETURN(mixer->f_proj_, ReadTensor(checkpoint, p + "f_proj.weight", {e, d}));
    HG_ASSIGN_OR_RETURN(mixer->g_proj_, ReadTensor(checkpoint, p + "g_proj.weight", {e, d}));
    HG_ASSIGN_OR_RETURN(mixer->g_norm_, ReadTensor(checkpoint, p + "g_norm.weight", {e}));
    HG_ASSIGN_OR_RETURN(mixer->o_proj_, ReadTensor(checkpoint, p + "o_proj.weight", {d, e}));
    if (config.use_short_conv) {
      // i and f each go through their own conv, without activation.
      for (const char* name : {"i_conv1d", "f_conv1d"}) {
        HG_ASSIGN_OR_RETURN(ShortConv conv, ShortConv::Read(checkpoint, p + name, e,
                                                            config.conv_size, /*silu=*/false));
        mixer->convs_.push_back(std::move(conv));
      }
    }
    return mixer;
  }

  MixerState NewState() const override { return NewMixerState(e_, convs_); }

  int64_t num_parameters() const override {
    return ShortConvParameters(convs_) + i_proj_.numel() + f_proj_.numel() + g_proj_.numel() +
           g_norm_.numel() + o_proj_.numel();
  }

  void Forward(const float* x, int64_t t_len, int64_t /*position*/, MixerState* state,
               float* out) override {
    const int64_t d = d_, e = e_;
    const size_t n = static_cast<size_t>(t_len * e);
    std::vector<float> i(n), f(n), g(n), o(n);
    RowInvariantLinear(x, t_len, d, i_proj_, i.data());
    RowInvariantLinear(x, t_len, d, f_proj_, f.data());
    if (!convs_.empty()) {
      convs_[0].Apply(i.data(), t_len, &state->conv[0]);
      convs_[1].Apply(f.data(), t_len, &state->conv[1]);
    }
    // f = logsigmoid(f), floored by the layer's bound: log(lb + (1 - lb)·σ(f));
    // i = silu(i)·(1 - exp(f)); h_t = exp(f_t)·h_{t-1} + i_t; o_t = h_t.
    float* h = state->recurrent.data();
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < e; ++c) {
        const size_t idx = static_cast<size_t>(t * e + c);
        const ForgetGate gate =
            LowerBoundedForgetGate(f[idx], lower_bound_.empty() ? 0.0 : lower_bound_[c]);
        const float log_gate = static_cast<float>(gate.log_gate);
        const float input = Silu(i[idx]) * static_cast<float>(gate.one_minus_gate);
        h[c] = std::exp(log_gate) * h[c] + input;
        o[idx] = h[c];
      }
    }
    // FusedRMSNormGated over all E channels: RMSNorm(o)·w·swish(g_proj(x)), eps = norm_eps.
    RowInvariantLinear(x, t_len, d, g_proj_, g.data());
    RmsNorm(o.data(), t_len, e, g_norm_.data.data(), eps_, o.data());
    for (size_t j = 0; j < n; ++j) o[j] *= Silu(g[j]);
    RowInvariantLinear(o.data(), t_len, e, o_proj_, out);
  }

 private:
  HgrnMixer() = default;

  int64_t d_ = 0, e_ = 0;
  float eps_ = 1e-6f;
  std::vector<float> lower_bound_;  // [E]; empty for layer 0 or without lower bounds
  HostTensor i_proj_, f_proj_, g_proj_, g_norm_, o_proj_;
  std::vector<ShortConv> convs_;  // i, f when use_short_conv
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildHgrn(const Checkpoint& checkpoint,
                                                 const ModelConfig& config) {
  if (config.family != ModelFamily::kHgrn) {
    return absl::InvalidArgumentError("BuildHgrn: the config is not an HGRN config");
  }
  if (config.use_lower_bound && config.expand_ratio != 1) {
    return absl::InvalidArgumentError("HGRN: lower bounds need expand_ratio 1");
  }
  return BuildLowerBoundedFlaModel(
      checkpoint, config,
      [&](int64_t layer, std::vector<float> bound) -> absl::StatusOr<std::unique_ptr<TokenMixer>> {
        return HgrnMixer::Read(checkpoint, config, layer, std::move(bound));
      });
}

}  // namespace hgeval::cpu
