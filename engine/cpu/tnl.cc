// TNL (TransNormerLLM, `modeling_transnormer.py`) on the CPU in fp32, read top to bottom
// as specs/models.md §9 writes it: linear attention with a data-independent decay per
// head and layer (ALiBi-style slopes), optional LRPE on q and k, SimpleRMSNorm without
// weights, a GLU without activation. The recurrent form runs token by token with the
// state in float64, so prefill and decode are one code path and forks are exact.
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/tensor_names.h"
#include "engine/model/tnl_decay.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

constexpr float kSrmsEps = 1e-6f;

// One layer's token_mixer: o_t = q_t S_t with S_t = decay S_{t-1} + k_t^T v_t per head (S
// [ek, e] per head, ek = 2e with LRPE, else e, float64 in the layer's MixerState
// recurrent64), then out_proj(u * srms(o)).
class TnlMixer final : public TokenMixer {
 public:
  // Reads layer `layer`'s weights under `m` (the mixer prefix).
  static absl::StatusOr<std::unique_ptr<TnlMixer>> Read(const Checkpoint& ckpt,
                                                        const ModelConfig& c, const std::string& m,
                                                        int64_t layer) {
    const int64_t d = c.hidden_size, h = c.num_heads, e = d / h;
    auto mixer = std::unique_ptr<TnlMixer>(new TnlMixer(d, h));
    CountingReader read(ckpt);
    HG_ASSIGN_OR_RETURN(mixer->qkvu_, read(m + "qkvu_proj.weight", {4 * d, d}));
    HG_ASSIGN_OR_RETURN(mixer->out_, read(m + "out_proj.weight", {d, d}));
    if (!c.tnl_lrpe.empty() && c.tnl_lrpe[layer]) {
      HG_ASSIGN_OR_RETURN(mixer->theta_, read(m + "lrpe.theta", {h, 1, e}));
    }
    if (c.use_bias) {
      HG_ASSIGN_OR_RETURN(mixer->qkvu_bias_, read(m + "qkvu_proj.bias", {4 * d}));
      HG_ASSIGN_OR_RETURN(mixer->out_bias_, read(m + "out_proj.bias", {d}));
    }
    mixer->decay_ = TnlDecays(h, layer, c.num_layers);
    mixer->parameters_ = read.parameters();
    return mixer;
  }

  MixerState NewState() const override {
    const int64_t e = d_ / h_;
    const int64_t ek = theta_.data.empty() ? e : 2 * e;
    MixerState state;
    state.recurrent64.assign(static_cast<size_t>(h_ * ek * e), 0.0);
    return state;
  }

  int64_t num_parameters() const override { return parameters_; }

  void Forward(const float* x, int64_t t_count, int64_t position, MixerState* state,
               float* out) override {
    const int64_t d = d_, h = h_, e = d / h;
    const bool lrpe = !theta_.data.empty();
    const int64_t ek = lrpe ? 2 * e : e;
    std::vector<float> qkvu(t_count * 4 * d), o(t_count * d), y(t_count * d);
    std::vector<double> qf(2 * e), kf(2 * e);
    RowInvariantLinear(x, t_count, d, qkvu_, qkvu.data());
    AddBias(qkvu.data(), t_count, 4 * d, qkvu_bias_);
    std::vector<double>& s = state->recurrent64;
    for (int64_t t = 0; t < t_count; ++t) {
      const float* row = &qkvu[t * 4 * d];
      const double pos = static_cast<double>(position + t);
      for (int64_t hh = 0; hh < h; ++hh) {
        for (int64_t c = 0; c < e; ++c) {
          const double q = Silu(row[hh * e + c]), k = Silu(row[d + hh * e + c]);
          if (lrpe) {
            const double angle = theta_.data[hh * e + c] * pos;
            const double cs = std::cos(angle), sn = std::sin(angle);
            qf[c] = q * cs;
            qf[e + c] = q * sn;
            kf[c] = k * cs;
            kf[e + c] = k * sn;
          } else {
            qf[c] = q;
            kf[c] = k;
          }
        }
        const float* v = row + 2 * d + hh * e;
        double* sh = &s[hh * ek * e];
        const double decay = decay_[hh];
        for (int64_t i = 0; i < ek; ++i) {
          for (int64_t j = 0; j < e; ++j) sh[i * e + j] = decay * sh[i * e + j] + kf[i] * v[j];
        }
        for (int64_t j = 0; j < e; ++j) {
          double acc = 0.0;
          for (int64_t i = 0; i < ek; ++i) acc += qf[i] * sh[i * e + j];
          o[t * d + hh * e + j] = static_cast<float>(acc);
        }
      }
    }
    // out = out_proj(u * srms(o)).
    RmsNorm(o.data(), t_count, d, /*weight=*/nullptr, kSrmsEps, y.data());
    for (int64_t t = 0; t < t_count; ++t) {
      for (int64_t i = 0; i < d; ++i) y[t * d + i] *= qkvu[t * 4 * d + 3 * d + i];
    }
    RowInvariantLinear(y.data(), t_count, d, out_, out);
    AddBias(out, t_count, d, out_bias_);
  }

 private:
  TnlMixer(int64_t d, int64_t heads) : d_(d), h_(heads) {}

  int64_t d_, h_;
  int64_t parameters_ = 0;
  HostTensor qkvu_;   // [4D, D]
  HostTensor out_;    // [D, D]
  HostTensor theta_;  // [H, 1, e] (LRPE layers only)
  // When bias: upstream's `bias` gives every projection of the layer one (qkvu_proj and
  // out_proj here, the GLU's l1, l2, l3 in the skeleton's MLP).
  HostTensor qkvu_bias_, out_bias_;
  std::vector<double> decay_;  // [H]: exp(-lambda_h)
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildTnl(const Checkpoint& ckpt, const ModelConfig& c) {
  if (c.family != ModelFamily::kTnl) {
    return absl::InvalidArgumentError("BuildTnl: the config is not a TNL model");
  }
  const int64_t d = c.hidden_size, g = c.intermediate_size;
  const BlockTensorNames names = BlockTensorNamesFor(ckpt, c);
  CpuModelParts parts;
  // SimpleRMSNorm everywhere (no weights, eps 1e-6), a GLU without activation, the
  // embedding scaled by sqrt(D) unless no_scale_embedding.
  parts.layout.mlp_silu = false;
  parts.layout.norm_weights = false;
  parts.layout.norm_eps = kSrmsEps;
  parts.layout.embedding_scale = c.tnl_scale_embedding ? std::sqrt(static_cast<float>(d)) : 1.0f;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    HG_ASSIGN_OR_RETURN(auto mixer, TnlMixer::Read(ckpt, c, names.MixerPrefix(l), l));
    parts.mixers.push_back(std::move(mixer));
    if (c.use_bias) {
      const std::string p = names.LayerPrefix(l);
      GatedMlpWeights bias;
      HG_ASSIGN_OR_RETURN(bias.gate, ckpt.ReadFloat(p + "channel_mixer.l1.bias", {g}));
      HG_ASSIGN_OR_RETURN(bias.up, ckpt.ReadFloat(p + "channel_mixer.l2.bias", {g}));
      HG_ASSIGN_OR_RETURN(bias.down, ckpt.ReadFloat(p + "channel_mixer.l3.bias", {d}));
      parts.mlp_biases.push_back(std::move(bias));
    }
  }
  return MakeCpuModel(ckpt, c, std::move(parts));
}

}  // namespace hgeval::cpu
