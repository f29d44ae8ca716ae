// Mamba-1 (Hugging Face MambaForCausalLM, `backbone.*` keys) on the CPU in fp32, with the
// selective-scan state kept in float64. See specs/models.md §6.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/fla_block.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// Scratch the layers' mixers share (layers run one after another), sized for T tokens.
struct MambaScratch {
  std::vector<float> xz, u, x_dbc, dt_in, dt, y;
};

// One layer's mixer: in_proj, the causal depthwise conv + silu over x (its window in the
// layer's MixerState conv[0]), the selective scan (the SSM state h [E, N] in recurrent64,
// float64: the scan accumulates over the whole sequence), gating by silu(z), out_proj.
class MambaMixer final : public TokenMixer {
 public:
  // Reads the layer's weights under `m` (the mixer prefix).
  static absl::StatusOr<std::unique_ptr<MambaMixer>> Read(const Checkpoint& ckpt,
                                                          const ModelConfig& c,
                                                          const std::string& m,
                                                          std::shared_ptr<MambaScratch> scratch) {
    auto mixer = std::unique_ptr<MambaMixer>(new MambaMixer(c, std::move(scratch)));
    HG_RETURN_IF_ERROR(mixer->ReadWeights(ckpt, c, m));
    return mixer;
  }

  MixerState NewState() const override {
    MixerState state;
    state.conv.push_back(conv_.NewWindow());
    state.recurrent64.assign(static_cast<size_t>(e_ * n_), 0.0);
    return state;
  }

  int64_t num_parameters() const override { return parameters_; }

  void Forward(const float* x, int64_t t_count, int64_t /*position*/, MixerState* state,
               float* out) override {
    MambaScratch& s = *scratch_;
    const int64_t d = out_proj_.shape[0], e = e_, n = n_, r = r_;
    const int64_t dbc = r + 2 * n;
    s.xz.resize(t_count * 2 * e);
    s.u.resize(t_count * e);
    s.x_dbc.resize(t_count * dbc);
    s.dt_in.resize(t_count * r);
    s.dt.resize(t_count * e);
    s.y.resize(t_count * e);
    RowInvariantLinear(x, t_count, d, in_proj_, s.xz.data());
    AddBias(s.xz.data(), t_count, 2 * e, in_proj_bias_);
    // Causal depthwise conv over [carried inputs | new inputs], then silu.
    for (int64_t t = 0; t < t_count; ++t) {
      std::memcpy(&s.u[t * e], &s.xz[t * 2 * e], e * sizeof(float));
    }
    conv_.Apply(s.u.data(), t_count, &state->conv[0]);

    // [dt_low_rank | B | C] = x_proj(u); dt = softplus(dt_proj(dt_low_rank) + bias).
    RowInvariantLinear(s.u.data(), t_count, e, x_proj_, s.x_dbc.data());
    for (int64_t t = 0; t < t_count; ++t) {
      std::memcpy(&s.dt_in[t * r], &s.x_dbc[t * dbc], r * sizeof(float));
    }
    RowInvariantLinear(s.dt_in.data(), t_count, r, dt_proj_, s.dt.data());
    for (int64_t t = 0; t < t_count; ++t) {
      for (int64_t c = 0; c < e; ++c) {
        s.dt[t * e + c] = Softplus(s.dt[t * e + c] + dt_bias_.data[c]);
      }
    }
    Scan(t_count, state->recurrent64.data());
    RowInvariantLinear(s.y.data(), t_count, e, out_proj_, out);
    AddBias(out, t_count, d, out_proj_bias_);
  }

 private:
  MambaMixer(const ModelConfig& c, std::shared_ptr<MambaScratch> scratch)
      : e_(c.mamba_inner), n_(c.state_size), r_(c.time_step_rank), scratch_(std::move(scratch)) {}

  absl::Status ReadWeights(const Checkpoint& ckpt, const ModelConfig& c, const std::string& m) {
    const int64_t d = c.hidden_size, e = e_, n = n_, r = r_;
    CountingReader read(ckpt);
    HG_ASSIGN_OR_RETURN(in_proj_, read(m + "in_proj.weight", {2 * e, d}));
    if (c.use_bias) {
      HG_ASSIGN_OR_RETURN(in_proj_bias_, read(m + "in_proj.bias", {2 * e}));
      HG_ASSIGN_OR_RETURN(out_proj_bias_, read(m + "out_proj.bias", {d}));
    }
    HG_ASSIGN_OR_RETURN(HostTensor conv_weight, read(m + "conv1d.weight", {e, 1, c.conv_kernel}));
    HostTensor conv_bias;
    if (c.use_conv_bias) {
      HG_ASSIGN_OR_RETURN(conv_bias, read(m + "conv1d.bias", {e}));
    }
    conv_ = ShortConv(std::move(conv_weight), std::move(conv_bias), /*silu=*/true);
    HG_ASSIGN_OR_RETURN(x_proj_, read(m + "x_proj.weight", {r + 2 * n, e}));
    HG_ASSIGN_OR_RETURN(dt_proj_, read(m + "dt_proj.weight", {e, r}));
    HG_ASSIGN_OR_RETURN(dt_bias_, read(m + "dt_proj.bias", {e}));
    HG_ASSIGN_OR_RETURN(HostTensor a_log, read(m + "A_log", {e, n}));
    a_.resize(a_log.data.size());
    for (size_t i = 0; i < a_log.data.size(); ++i) a_[i] = -std::exp(a_log.data[i]);
    HG_ASSIGN_OR_RETURN(d_skip_, read(m + "D", {e}));
    HG_ASSIGN_OR_RETURN(out_proj_, read(m + "out_proj.weight", {d, e}));
    parameters_ = read.parameters();
    return absl::OkStatus();
  }

  // The selective scan, channel by channel (channels are independent, so the result does
  // not depend on how they are split over threads):
  //   h_t = exp(dt*A) h_{t-1} + dt*B_t*u_t;  y_t = h_t·C_t + D*u_t;  y_t *= silu(z_t).
  void Scan(int64_t t_count, double* ssm) {
    MambaScratch& s = *scratch_;
    const int64_t e = e_, n = n_, r = r_;
    const int64_t dbc = r + 2 * n;
    constexpr int64_t kBlock = 16;
    ParallelFor((e + kBlock - 1) / kBlock, [&](int64_t block) {
      const int64_t end = std::min(e, (block + 1) * kBlock);
      for (int64_t c = block * kBlock; c < end; ++c) {
        double* h = ssm + c * n;
        const float* a = &a_[c * n];
        for (int64_t t = 0; t < t_count; ++t) {
          const double dt = s.dt[t * e + c];
          const double u = s.u[t * e + c];
          const float* b = &s.x_dbc[t * dbc + r];
          const float* cc = b + n;
          double y = 0.0;
          for (int64_t i = 0; i < n; ++i) {
            h[i] = std::exp(dt * a[i]) * h[i] + dt * b[i] * u;
            y += h[i] * cc[i];
          }
          const float out = static_cast<float>(y + d_skip_.data[c] * u);
          s.y[t * e + c] = out * Silu(s.xz[t * 2 * e + e + c]);
        }
      }
    });
  }

  int64_t e_, n_, r_;
  int64_t parameters_ = 0;
  std::shared_ptr<MambaScratch> scratch_;
  HostTensor in_proj_;        // [2E, D]
  HostTensor in_proj_bias_;   // [2E] or empty
  ShortConv conv_;            // conv1d: weight [E, 1, Kc], bias [E] or none; silu
  HostTensor x_proj_;         // [R + 2N, E]
  HostTensor dt_proj_;        // [E, R]
  HostTensor dt_bias_;        // [E]
  std::vector<float> a_;      // [E, N]: -exp(A_log)
  HostTensor d_skip_;         // [E]
  HostTensor out_proj_;       // [D, E]
  HostTensor out_proj_bias_;  // [D] or empty
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildMamba(const Checkpoint& ckpt, const ModelConfig& c) {
  if (c.family != ModelFamily::kMamba) {
    return absl::InvalidArgumentError("BuildMamba: the config is not a Mamba model");
  }
  if (c.mamba_inner <= 0)
    return absl::InvalidArgumentError("config.json: Mamba intermediate size must be positive");
  const BlockTensorNames names = BlockTensorNamesFor(ckpt, c);
  auto scratch = std::make_shared<MambaScratch>();
  CpuModelParts parts;
  parts.layout.mlp = false;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    HG_ASSIGN_OR_RETURN(auto mixer, MambaMixer::Read(ckpt, c, names.MixerPrefix(l), scratch));
    parts.mixers.push_back(std::move(mixer));
  }
  return MakeCpuModel(ckpt, c, std::move(parts));
}

}  // namespace hgeval::cpu
