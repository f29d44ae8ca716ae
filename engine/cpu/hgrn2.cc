// HGRN2 (fla models/hgrn2, layers/hgrn2.py; specs/models.md §2) on the CPU, fp32.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/fla_block.h"
#include "engine/cpu/linear_attention.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// fla runs g_norm through rms_norm_linear without an eps argument: its default 1e-5
// applies, whatever config.norm_eps says (specs/models.md §2.4 step 6).
constexpr float kGNormEps = 1e-5f;

class Hgrn2Mixer final : public TokenMixer {
 public:
  static absl::StatusOr<std::unique_ptr<Hgrn2Mixer>> Read(const Checkpoint& checkpoint,
                                                          const ModelConfig& config, int64_t layer,
                                                          std::vector<float> lower_bound) {
    auto mixer = std::unique_ptr<Hgrn2Mixer>(new Hgrn2Mixer());
    const int64_t d = config.hidden_size;
    mixer->d_ = d;
    // H = D / expand_ratio heads of key and value width expand_ratio (config.cc resolves
    // expand_ratio vs num_heads the way the layer does).
    mixer->shape_.heads = config.num_heads;
    mixer->shape_.kv_heads = config.num_heads;
    mixer->shape_.key_dim = config.expand_ratio;
    mixer->shape_.value_dim = d / config.num_heads;
    mixer->shape_.scale = 1.0 / std::sqrt(static_cast<double>(config.expand_ratio));
    mixer->lower_bound_ = std::move(lower_bound);
    const std::string p = BlockTensorNamesFor(checkpoint, config).MixerPrefix(layer);
    HG_ASSIGN_OR_RETURN(mixer->q_proj_, ReadTensor(checkpoint, p + "q_proj.weight", {d, d}));
    HG_ASSIGN_OR_RETURN(mixer->f_proj_, ReadTensor(checkpoint, p + "f_proj.weight", {d, d}));
    HG_ASSIGN_OR_RETURN(mixer->i_proj_, ReadTensor(checkpoint, p + "i_proj.weight", {d, d}));
    HG_ASSIGN_OR_RETURN(mixer->g_norm_, ReadTensor(checkpoint, p + "g_norm.weight", {d}));
    HG_ASSIGN_OR_RETURN(mixer->o_proj_, ReadTensor(checkpoint, p + "o_proj.weight", {d, d}));
    if (config.use_short_conv) {
      // q, f and i each go through their own conv, without activation.
      for (const char* name : {"q_conv1d", "f_conv1d", "i_conv1d"}) {
        HG_ASSIGN_OR_RETURN(ShortConv conv, ShortConv::Read(checkpoint, p + name, d,
                                                            config.conv_size, /*silu=*/false));
        mixer->convs_.push_back(std::move(conv));
      }
    }
    return mixer;
  }

  MixerState NewState() const override { return NewMixerState(shape_.state_size(), convs_); }

  int64_t num_parameters() const override {
    return ShortConvParameters(convs_) + q_proj_.numel() + f_proj_.numel() + i_proj_.numel() +
           g_norm_.numel() + o_proj_.numel();
  }

  void Forward(const float* x, int64_t t_len, int64_t /*position*/, MixerState* state,
               float* out) override {
    const int64_t d = d_;
    const size_t n = static_cast<size_t>(t_len * d);
    std::vector<float> q(n), f(n), i(n), o(n);
    RowInvariantLinear(x, t_len, d, q_proj_, q.data());
    RowInvariantLinear(x, t_len, d, f_proj_, f.data());
    RowInvariantLinear(x, t_len, d, i_proj_, i.data());
    if (!convs_.empty()) {
      convs_[0].Apply(q.data(), t_len, &state->conv[0]);
      convs_[1].Apply(f.data(), t_len, &state->conv[1]);
      convs_[2].Apply(i.data(), t_len, &state->conv[2]);
    }
    for (auto& value : q) value = Silu(value);
    // Forget gate (in double): g = log(lb + (1 - lb)·σ(f)), k = 1 - exp(g). f now holds g.
    std::vector<float> k(n);
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < d; ++c) {
        const size_t idx = static_cast<size_t>(t * d + c);
        const ForgetGate gate =
            LowerBoundedForgetGate(f[idx], lower_bound_.empty() ? 0.0 : lower_bound_[c]);
        f[idx] = static_cast<float>(gate.log_gate);
        k[idx] = static_cast<float>(gate.one_minus_gate);
      }
    }
    GatedLinearAttention(shape_, q.data(), k.data(), i.data(), f.data(), t_len,
                         state->recurrent.data(), o.data());
    // g_norm: ONE RMSNorm over all D channels (not per head), then o_proj.
    RmsNorm(o.data(), t_len, d, g_norm_.data.data(), kGNormEps, o.data());
    RowInvariantLinear(o.data(), t_len, d, o_proj_, out);
  }

 private:
  Hgrn2Mixer() = default;

  int64_t d_ = 0;
  LinearAttentionShape shape_;
  std::vector<float> lower_bound_;  // [D]; empty for layer 0 or without lower bounds
  HostTensor q_proj_, f_proj_, i_proj_, g_norm_, o_proj_;
  std::vector<ShortConv> convs_;  // q, f, i when use_short_conv
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildHgrn2(const Checkpoint& checkpoint,
                                                  const ModelConfig& config) {
  if (config.family != ModelFamily::kHgrn2) {
    return absl::InvalidArgumentError("BuildHgrn2: the config is not an HGRN2 config");
  }
  if (config.num_heads <= 0 || config.expand_ratio <= 0 ||
      config.num_heads * config.expand_ratio != config.hidden_size) {
    return absl::InvalidArgumentError(absl::StrCat("HGRN2: num_heads ", config.num_heads,
                                                   " x expand_ratio ", config.expand_ratio,
                                                   " must equal hidden_size ", config.hidden_size));
  }
  return BuildLowerBoundedFlaModel(
      checkpoint, config,
      [&](int64_t layer, std::vector<float> bound) -> absl::StatusOr<std::unique_ptr<TokenMixer>> {
        return Hgrn2Mixer::Read(checkpoint, config, layer, std::move(bound));
      });
}

}  // namespace hgeval::cpu
