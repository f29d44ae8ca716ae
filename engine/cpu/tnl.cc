// TNL (TransNormerLLM, `modeling_transnormer.py`) on the CPU in fp32, read top to bottom
// as specs/models.md §9 writes it: linear attention with a data-independent decay per
// head and layer (ALiBi-style slopes), optional LRPE on q and k, SimpleRMSNorm without
// weights, a GLU without activation. The recurrent form runs token by token with the
// state in float64, so prefill and decode are one code path and forks are exact.
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
#include "engine/model/tnl_decay.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

constexpr float kSrmsEps = 1e-6f;

// Per layer and head: S [ek, e] (ek = 2e with LRPE, else e), float64.
class TnlState : public SequenceState {
 public:
  TnlState(const void* owner, std::vector<std::vector<double>> layers)
      : owner_(owner), layers_(std::move(layers)) {}
  int64_t position() const override { return position_; }
  std::unique_ptr<SequenceState> Clone() const override {
    return std::make_unique<TnlState>(*this);
  }
  size_t bytes() const override {
    size_t total = sizeof(*this);
    for (const auto& l : layers_) total += l.size() * sizeof(double);
    return total;
  }
  const void* owner() const { return owner_; }
  std::vector<double>& layer(int64_t l) { return layers_[l]; }
  void Advance(int64_t tokens) { position_ += tokens; }

 private:
  const void* owner_;
  int64_t position_ = 0;
  std::vector<std::vector<double>> layers_;
};

struct TnlLayer {
  HostTensor qkvu;   // [4D, D]
  HostTensor out;    // [D, D]
  HostTensor theta;  // [H, 1, e] (LRPE layers only)
  HostTensor l1, l2, l3;
  // When bias: upstream's `bias` gives every projection of the layer one (qkvu_proj and
  // out_proj as well as the GLU's l1, l2, l3).
  HostTensor qkvu_bias, out_bias, b1, b2, b3;
  std::vector<double> decay;  // [H]: exp(-lambda_h)
};

// SimpleRMSNorm: x * rsqrt(mean(x^2) + eps), no weight.
void SimpleRmsNorm(const float* x, int64_t rows, int64_t d, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    double ss = 0.0;
    for (int64_t i = 0; i < d; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + kSrmsEps));
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = xr[i] * inv;
  }
}

class TnlModel final : public CpuModelBase<TnlState> {
 public:
  TnlModel(ModelConfig config, ModelInfo info, HostTensor embeddings, std::vector<TnlLayer> layers,
           HostTensor lm_head)
      : CpuModelBase(std::move(config), std::move(info)),
        embeddings_(std::move(embeddings)),
        layers_(std::move(layers)),
        lm_head_(std::move(lm_head)) {}

  std::unique_ptr<SequenceState> NewState() const override {
    const int64_t h = config_.num_heads, e = config_.hidden_size / h;
    std::vector<std::vector<double>> layers;
    for (const TnlLayer& layer : layers_) {
      const int64_t ek = layer.theta.data.empty() ? e : 2 * e;
      layers.emplace_back(h * ek * e, 0.0);
    }
    return std::make_unique<TnlState>(this, std::move(layers));
  }

 private:
  void RunItem(const ForwardItem& item, TnlState* state, ForwardOutput* out) override {
    const int64_t t_count = static_cast<int64_t>(item.tokens.size());
    const int64_t d = config_.hidden_size, h = config_.num_heads, e = d / h;
    const int64_t g = config_.intermediate_size;
    const float scale = config_.tnl_scale_embedding ? std::sqrt(static_cast<float>(d)) : 1.0f;
    std::vector<float> x(t_count * d), y(t_count * d), qkvu(t_count * 4 * d), o(t_count * d);
    std::vector<float> a(t_count * g), b(t_count * g), delta(t_count * d);
    for (int64_t t = 0; t < t_count; ++t) {
      const float* row = &embeddings_.data[static_cast<int64_t>(item.tokens[t]) * d];
      for (int64_t i = 0; i < d; ++i) x[t * d + i] = row[i] * scale;
    }
    std::vector<double> qf(2 * e), kf(2 * e);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const TnlLayer& layer = layers_[l];
      const bool lrpe = !layer.theta.data.empty();
      const int64_t ek = lrpe ? 2 * e : e;
      // Token mixer: o_t = q_t S_t with S_t = decay S_{t-1} + k_t^T v_t, per head.
      SimpleRmsNorm(x.data(), t_count, d, y.data());
      RowInvariantLinear(y.data(), t_count, d, layer.qkvu, qkvu.data());
      AddBias(qkvu.data(), t_count, 4 * d, layer.qkvu_bias);
      std::vector<double>& s = state->layer(static_cast<int64_t>(l));
      for (int64_t t = 0; t < t_count; ++t) {
        const float* row = &qkvu[t * 4 * d];
        const double pos = static_cast<double>(state->position() + t);
        for (int64_t hh = 0; hh < h; ++hh) {
          for (int64_t c = 0; c < e; ++c) {
            const double q = Silu(row[hh * e + c]), k = Silu(row[d + hh * e + c]);
            if (lrpe) {
              const double angle = layer.theta.data[hh * e + c] * pos;
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
          const double decay = layer.decay[hh];
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
      // x += out_proj(u * srms(o)).
      SimpleRmsNorm(o.data(), t_count, d, y.data());
      for (int64_t t = 0; t < t_count; ++t) {
        for (int64_t i = 0; i < d; ++i) y[t * d + i] *= qkvu[t * 4 * d + 3 * d + i];
      }
      RowInvariantLinear(y.data(), t_count, d, layer.out, delta.data());
      AddBias(delta.data(), t_count, d, layer.out_bias);
      for (int64_t i = 0; i < t_count * d; ++i) x[i] += delta[i];
      // Channel mixer: x += l3(l1(n) * l2(n)), n = srms(x).
      SimpleRmsNorm(x.data(), t_count, d, y.data());
      RowInvariantLinear(y.data(), t_count, d, layer.l1, a.data());
      AddBias(a.data(), t_count, g, layer.b1);
      RowInvariantLinear(y.data(), t_count, d, layer.l2, b.data());
      AddBias(b.data(), t_count, g, layer.b2);
      for (int64_t i = 0; i < t_count * g; ++i) a[i] *= b[i];
      RowInvariantLinear(a.data(), t_count, g, layer.l3, delta.data());
      AddBias(delta.data(), t_count, d, layer.b3);
      for (int64_t i = 0; i < t_count * d; ++i) x[i] += delta[i];
    }
    state->Advance(t_count);
    SimpleRmsNorm(x.data(), t_count, d, y.data());
    ScoreHead(y.data(), d, lm_head_, item, out);
  }

  HostTensor embeddings_;  // [V, D]
  std::vector<TnlLayer> layers_;
  HostTensor lm_head_;  // [V, D]
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildTnl(const Checkpoint& ckpt, const ModelConfig& c) {
  if (c.family != ModelFamily::kTnl) {
    return absl::InvalidArgumentError("BuildTnl: the config is not a TNL model");
  }
  const int64_t d = c.hidden_size, h = c.num_heads, e = d / h, g = c.intermediate_size;
  const int64_t L = c.num_layers;
  CountingReader read(ckpt);
  const BlockTensorNames names = BlockTensorNamesFor(ckpt, c);
  HG_ASSIGN_OR_RETURN(HostTensor embeddings, read(names.embed, {c.vocab_size, d}));
  std::vector<TnlLayer> layers(L);
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = names.LayerPrefix(l), m = names.MixerPrefix(l);
    TnlLayer& layer = layers[l];
    HG_ASSIGN_OR_RETURN(layer.qkvu, read(m + "qkvu_proj.weight", {4 * d, d}));
    HG_ASSIGN_OR_RETURN(layer.out, read(m + "out_proj.weight", {d, d}));
    if (!c.tnl_lrpe.empty() && c.tnl_lrpe[l]) {
      HG_ASSIGN_OR_RETURN(layer.theta, read(m + "lrpe.theta", {h, 1, e}));
    }
    HG_ASSIGN_OR_RETURN(GatedMlpWeights glu, ReadBlockMlp(ckpt, c, l));
    read.Count(glu.gate.numel() + glu.up.numel() + glu.down.numel());
    layer.l1 = std::move(glu.gate);
    layer.l2 = std::move(glu.up);
    layer.l3 = std::move(glu.down);
    if (c.use_bias) {
      HG_ASSIGN_OR_RETURN(layer.qkvu_bias, read(m + "qkvu_proj.bias", {4 * d}));
      HG_ASSIGN_OR_RETURN(layer.out_bias, read(m + "out_proj.bias", {d}));
      HG_ASSIGN_OR_RETURN(layer.b1, read(p + "channel_mixer.l1.bias", {g}));
      HG_ASSIGN_OR_RETURN(layer.b2, read(p + "channel_mixer.l2.bias", {g}));
      HG_ASSIGN_OR_RETURN(layer.b3, read(p + "channel_mixer.l3.bias", {d}));
    }
    layer.decay = TnlDecays(h, l, L);
  }
  HG_ASSIGN_OR_RETURN(HostTensor lm_head, read.ReadHead(names, c));

  ModelInfo info = CpuModelInfo(c, read.parameters());
  return std::unique_ptr<Model>(new TnlModel(c, std::move(info), std::move(embeddings),
                                             std::move(layers), std::move(lm_head)));
}

}  // namespace hgeval::cpu
