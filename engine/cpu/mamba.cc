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
#include "engine/cpu/cpu_model_base.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// Per layer: the last conv_kernel-1 inputs of the causal conv ([Kc-1, E], oldest first;
// zeros at the start) and the SSM state h [E, N] (float64: the scan accumulates over the
// whole sequence).
class MambaState : public SequenceState {
 public:
  MambaState(const void* owner, int64_t layers, int64_t conv_size, int64_t ssm_size)
      : owner_(owner),
        conv_(layers, std::vector<float>(conv_size, 0.0f)),
        ssm_(layers, std::vector<double>(ssm_size, 0.0)) {}

  int64_t position() const override { return position_; }
  std::unique_ptr<SequenceState> Clone() const override {
    return std::make_unique<MambaState>(*this);
  }
  size_t bytes() const override {
    size_t total = sizeof(*this);
    for (size_t l = 0; l < conv_.size(); ++l) {
      total += conv_[l].size() * sizeof(float) + ssm_[l].size() * sizeof(double);
    }
    return total;
  }

  const void* owner() const { return owner_; }
  std::vector<float>& conv(int64_t layer) { return conv_[layer]; }
  std::vector<double>& ssm(int64_t layer) { return ssm_[layer]; }
  void Advance(int64_t tokens) { position_ += tokens; }

 private:
  const void* owner_;
  int64_t position_ = 0;
  std::vector<std::vector<float>> conv_;
  std::vector<std::vector<double>> ssm_;
};

struct MambaLayer {
  HostTensor norm;           // [D]
  HostTensor in_proj;        // [2E, D]
  HostTensor in_proj_bias;   // [2E] or empty
  HostTensor conv_weight;    // [E, 1, Kc]
  HostTensor conv_bias;      // [E] or empty
  HostTensor x_proj;         // [R + 2N, E]
  HostTensor dt_proj;        // [E, R]
  HostTensor dt_bias;        // [E]
  std::vector<float> a;      // [E, N]: -exp(A_log)
  HostTensor d_skip;         // [E]
  HostTensor out_proj;       // [D, E]
  HostTensor out_proj_bias;  // [D] or empty
};

struct MambaScratch {
  std::vector<float> hidden, normed, xz, window, u, x_dbc, dt_in, dt, y, out;
};

class MambaModel final : public CpuModelBase<MambaState> {
 public:
  MambaModel(ModelConfig config, ModelInfo info, HostTensor embeddings,
             std::vector<MambaLayer> layers, HostTensor final_norm, HostTensor lm_head)
      : CpuModelBase(std::move(config), std::move(info)),
        embeddings_(std::move(embeddings)),
        layers_(std::move(layers)),
        final_norm_(std::move(final_norm)),
        lm_head_(std::move(lm_head)) {}

  std::unique_ptr<SequenceState> NewState() const override {
    return std::make_unique<MambaState>(this, config_.num_layers,
                                        (config_.conv_kernel - 1) * config_.mamba_inner,
                                        config_.mamba_inner * config_.state_size);
  }

 private:
  void RunItem(const ForwardItem& item, MambaState* state, ForwardOutput* out) override {
    const int64_t t_count = static_cast<int64_t>(item.tokens.size());
    const int64_t d = config_.hidden_size;
    const int64_t e = config_.mamba_inner;
    const int64_t n = config_.state_size;
    const int64_t r = config_.time_step_rank;
    const int64_t kc = config_.conv_kernel;
    const int64_t dbc = r + 2 * n;
    const float eps = static_cast<float>(config_.norm_eps);
    MambaScratch& s = scratch_;
    s.hidden.resize(t_count * d);
    s.normed.resize(t_count * d);
    s.xz.resize(t_count * 2 * e);
    s.window.resize((kc - 1 + t_count) * e);
    s.u.resize(t_count * e);
    s.x_dbc.resize(t_count * dbc);
    s.dt_in.resize(t_count * r);
    s.dt.resize(t_count * e);
    s.y.resize(t_count * e);
    s.out.resize(t_count * d);
    for (int64_t t = 0; t < t_count; ++t) {
      std::memcpy(&s.hidden[t * d], &embeddings_.data[item.tokens[t] * d], d * sizeof(float));
    }
    for (size_t l = 0; l < layers_.size(); ++l) {
      const MambaLayer& layer = layers_[l];
      RmsNorm(s.hidden.data(), t_count, d, layer.norm.data.data(), eps, s.normed.data());
      RowInvariantLinear(s.normed.data(), t_count, d, layer.in_proj, s.xz.data());
      AddBias(s.xz.data(), t_count, 2 * e, layer.in_proj_bias);

      // Causal depthwise conv over [carried inputs | new inputs], then silu.
      std::vector<float>& carried = state->conv(l);
      std::copy(carried.begin(), carried.end(), s.window.begin());
      for (int64_t t = 0; t < t_count; ++t) {
        std::memcpy(&s.window[(kc - 1 + t) * e], &s.xz[t * 2 * e], e * sizeof(float));
      }
      const float* conv_w = layer.conv_weight.data.data();
      for (int64_t t = 0; t < t_count; ++t) {
        for (int64_t c = 0; c < e; ++c) {
          float acc = layer.conv_bias.data.empty() ? 0.0f : layer.conv_bias.data[c];
          for (int64_t k = 0; k < kc; ++k) acc += conv_w[c * kc + k] * s.window[(t + k) * e + c];
          s.u[t * e + c] = Silu(acc);
        }
      }
      std::copy(s.window.end() - carried.size(), s.window.end(), carried.begin());

      // [dt_low_rank | B | C] = x_proj(u); dt = softplus(dt_proj(dt_low_rank) + bias).
      RowInvariantLinear(s.u.data(), t_count, e, layer.x_proj, s.x_dbc.data());
      for (int64_t t = 0; t < t_count; ++t) {
        std::memcpy(&s.dt_in[t * r], &s.x_dbc[t * dbc], r * sizeof(float));
      }
      RowInvariantLinear(s.dt_in.data(), t_count, r, layer.dt_proj, s.dt.data());
      for (int64_t t = 0; t < t_count; ++t) {
        for (int64_t c = 0; c < e; ++c) {
          s.dt[t * e + c] = Softplus(s.dt[t * e + c] + layer.dt_bias.data[c]);
        }
      }
      Scan(layer, t_count, state->ssm(l).data());
      RowInvariantLinear(s.y.data(), t_count, e, layer.out_proj, s.out.data());
      AddBias(s.out.data(), t_count, d, layer.out_proj_bias);
      for (int64_t i = 0; i < t_count * d; ++i) s.hidden[i] += s.out[i];
    }
    state->Advance(t_count);
    RmsNorm(s.hidden.data(), t_count, d, final_norm_.data.data(), eps, s.normed.data());
    ScoreHead(s.normed.data(), d, lm_head_, item, out);
  }

  // The selective scan, channel by channel (channels are independent, so the result does
  // not depend on how they are split over threads):
  //   h_t = exp(dt*A) h_{t-1} + dt*B_t*u_t;  y_t = h_t·C_t + D*u_t;  y_t *= silu(z_t).
  void Scan(const MambaLayer& layer, int64_t t_count, double* ssm) {
    MambaScratch& s = scratch_;
    const int64_t e = config_.mamba_inner;
    const int64_t n = config_.state_size;
    const int64_t r = config_.time_step_rank;
    const int64_t dbc = r + 2 * n;
    constexpr int64_t kBlock = 16;
    ParallelFor((e + kBlock - 1) / kBlock, [&](int64_t block) {
      const int64_t end = std::min(e, (block + 1) * kBlock);
      for (int64_t c = block * kBlock; c < end; ++c) {
        double* h = ssm + c * n;
        const float* a = &layer.a[c * n];
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
          const float out = static_cast<float>(y + layer.d_skip.data[c] * u);
          s.y[t * e + c] = out * Silu(s.xz[t * 2 * e + e + c]);
        }
      }
    });
  }

  HostTensor embeddings_;  // [V, D]
  std::vector<MambaLayer> layers_;
  HostTensor final_norm_;  // [D]
  HostTensor lm_head_;     // [V, D]
  MambaScratch scratch_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildMamba(const Checkpoint& ckpt, const ModelConfig& c) {
  if (c.family != ModelFamily::kMamba) {
    return absl::InvalidArgumentError("BuildMamba: the config is not a Mamba model");
  }
  const int64_t d = c.hidden_size;
  const int64_t e = c.mamba_inner;
  const int64_t n = c.state_size;
  const int64_t r = c.time_step_rank;
  if (e <= 0)
    return absl::InvalidArgumentError("config.json: Mamba intermediate size must be positive");
  CountingReader read(ckpt);

  const BlockTensorNames names = BlockTensorNamesFor(ckpt, c);
  HG_ASSIGN_OR_RETURN(HostTensor embeddings, read(names.embed, {c.vocab_size, d}));
  std::vector<MambaLayer> layers(c.num_layers);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string m = names.MixerPrefix(l);
    MambaLayer& layer = layers[l];
    HG_ASSIGN_OR_RETURN(layer.norm, read(names.Norm1Weight(l), {d}));
    HG_ASSIGN_OR_RETURN(layer.in_proj, read(m + "in_proj.weight", {2 * e, d}));
    if (c.use_bias) {
      HG_ASSIGN_OR_RETURN(layer.in_proj_bias, read(m + "in_proj.bias", {2 * e}));
      HG_ASSIGN_OR_RETURN(layer.out_proj_bias, read(m + "out_proj.bias", {d}));
    }
    HG_ASSIGN_OR_RETURN(layer.conv_weight, read(m + "conv1d.weight", {e, 1, c.conv_kernel}));
    if (c.use_conv_bias) {
      HG_ASSIGN_OR_RETURN(layer.conv_bias, read(m + "conv1d.bias", {e}));
    }
    HG_ASSIGN_OR_RETURN(layer.x_proj, read(m + "x_proj.weight", {r + 2 * n, e}));
    HG_ASSIGN_OR_RETURN(layer.dt_proj, read(m + "dt_proj.weight", {e, r}));
    HG_ASSIGN_OR_RETURN(layer.dt_bias, read(m + "dt_proj.bias", {e}));
    HG_ASSIGN_OR_RETURN(HostTensor a_log, read(m + "A_log", {e, n}));
    layer.a.resize(a_log.data.size());
    for (size_t i = 0; i < a_log.data.size(); ++i) layer.a[i] = -std::exp(a_log.data[i]);
    HG_ASSIGN_OR_RETURN(layer.d_skip, read(m + "D", {e}));
    HG_ASSIGN_OR_RETURN(layer.out_proj, read(m + "out_proj.weight", {d, e}));
  }
  HG_ASSIGN_OR_RETURN(HostTensor final_norm, read(names.final_norm, {d}));
  HG_ASSIGN_OR_RETURN(HostTensor lm_head, read.ReadHead(names, c));

  ModelInfo info = CpuModelInfo(c, read.parameters());
  return std::unique_ptr<Model>(new MambaModel(c, std::move(info), std::move(embeddings),
                                               std::move(layers), std::move(final_norm),
                                               std::move(lm_head)));
}

}  // namespace hgeval::cpu
