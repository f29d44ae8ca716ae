// GLA (fla models/gla, layers/gla.py; specs/models.md §4) on the CPU, fp32.
#include <cmath>
#include <functional>
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

// Hard-coded in fla's GatedLinearAttention (not config fields).
constexpr float kGateLogitNormalizer = 16.0f;
constexpr int64_t kGateLowRankDim = 16;

// The ACT2FN names a GLA feature_map may take (applied to q and k).
absl::StatusOr<std::function<float(float)>> FeatureMap(const std::string& name) {
  if (name.empty()) return std::function<float(float)>();
  if (name == "relu") return std::function<float(float)>([](float x) { return x > 0 ? x : 0.0f; });
  if (name == "sigmoid") return std::function<float(float)>([](float x) { return Sigmoid(x); });
  if (name == "silu" || name == "swish") {
    return std::function<float(float)>([](float x) { return Silu(x); });
  }
  if (name == "logsigmoid") {
    return std::function<float(float)>([](float x) { return LogSigmoid(x); });
  }
  return absl::UnimplementedError(absl::StrCat("GLA: feature_map '", name,
                                               "' is not supported (relu, sigmoid, silu, swish, "
                                               "logsigmoid)"));
}

class GlaMixer final : public TokenMixer {
 public:
  static absl::StatusOr<std::unique_ptr<GlaMixer>> Read(const Checkpoint& checkpoint,
                                                        const ModelConfig& config, int64_t layer) {
    auto mixer = std::unique_ptr<GlaMixer>(new GlaMixer());
    const int64_t d = config.hidden_size;
    const int64_t key_dim = static_cast<int64_t>(d * config.expand_k);
    const int64_t value_dim = static_cast<int64_t>(d * config.expand_v);
    const int64_t heads = config.num_heads;
    const int64_t kv_heads = config.num_kv_heads > 0 ? config.num_kv_heads : heads;
    if (heads % kv_heads != 0 || key_dim % heads != 0 || value_dim % heads != 0) {
      return absl::InvalidArgumentError("GLA: key/value widths must divide evenly into heads");
    }
    const int64_t group = heads / kv_heads;
    mixer->d_ = d;
    mixer->shape_.heads = heads;
    mixer->shape_.kv_heads = kv_heads;
    mixer->shape_.key_dim = key_dim / heads;
    mixer->shape_.value_dim = value_dim / heads;
    mixer->shape_.scale = 1.0 / std::sqrt(static_cast<double>(mixer->shape_.key_dim));
    mixer->clamp_min_ = config.clamp_min;
    HG_ASSIGN_OR_RETURN(mixer->feature_map_, FeatureMap(config.feature_map));
    const std::string p = BlockTensorNamesFor(checkpoint, config).MixerPrefix(layer);
    HG_ASSIGN_OR_RETURN(mixer->q_proj_, ReadTensor(checkpoint, p + "q_proj.weight", {key_dim, d}));
    HG_ASSIGN_OR_RETURN(mixer->k_proj_,
                        ReadTensor(checkpoint, p + "k_proj.weight", {key_dim / group, d}));
    HG_ASSIGN_OR_RETURN(mixer->v_proj_,
                        ReadTensor(checkpoint, p + "v_proj.weight", {value_dim / group, d}));
    HG_ASSIGN_OR_RETURN(mixer->gk_down_,
                        ReadTensor(checkpoint, p + "gk_proj.0.weight", {kGateLowRankDim, d}));
    HG_ASSIGN_OR_RETURN(mixer->gk_up_, ReadTensor(checkpoint, p + "gk_proj.1.weight",
                                                  {key_dim / group, kGateLowRankDim}));
    HG_ASSIGN_OR_RETURN(mixer->gk_bias_,
                        ReadTensor(checkpoint, p + "gk_proj.1.bias", {key_dim / group}));
    HG_ASSIGN_OR_RETURN(mixer->o_proj_,
                        ReadTensor(checkpoint, p + "o_proj.weight", {d, value_dim}));
    const int64_t dv = value_dim / heads;
    mixer->output_gate_ = config.use_output_gate;
    if (config.use_output_gate) {
      HG_ASSIGN_OR_RETURN(mixer->g_proj_,
                          ReadTensor(checkpoint, p + "g_proj.weight", {value_dim, d}));
    }
    // fuse_norm with a swish gate stores the norm as g_norm_swish_gate; otherwise g_norm.
    // Both are a per-head RMSNorm over dv with one weight shared by the heads.
    const std::string fused = p + "g_norm_swish_gate.weight";
    HG_ASSIGN_OR_RETURN(
        mixer->g_norm_,
        ReadTensor(checkpoint, checkpoint.Has(fused) ? fused : p + "g_norm.weight", {dv}));
    if (config.use_short_conv) {
      // q, k and v convs, each followed by silu.
      const int64_t widths[3] = {key_dim, key_dim / group, value_dim / group};
      const char* names[3] = {"q_conv1d", "k_conv1d", "v_conv1d"};
      for (int j = 0; j < 3; ++j) {
        HG_ASSIGN_OR_RETURN(ShortConv conv, ShortConv::Read(checkpoint, p + names[j], widths[j],
                                                            config.conv_size, /*silu=*/true));
        mixer->convs_.push_back(std::move(conv));
      }
    }
    return mixer;
  }

  MixerState NewState() const override { return NewMixerState(shape_.state_size(), convs_); }

  int64_t num_parameters() const override {
    return ShortConvParameters(convs_) + q_proj_.numel() + k_proj_.numel() + v_proj_.numel() +
           gk_down_.numel() + gk_up_.numel() + gk_bias_.numel() + o_proj_.numel() +
           g_proj_.numel() + g_norm_.numel();
  }

  void Forward(const float* x, int64_t t_len, int64_t /*position*/, MixerState* state,
               float* out) override {
    const int64_t d = d_;
    const int64_t heads = shape_.heads;
    const int64_t dk = shape_.key_dim, dv = shape_.value_dim;
    const int64_t q_width = heads * dk;
    const int64_t k_width = shape_.kv_heads * dk;
    const int64_t v_width = shape_.kv_heads * dv;
    std::vector<float> q(static_cast<size_t>(t_len * q_width));
    std::vector<float> k(static_cast<size_t>(t_len * k_width));
    std::vector<float> v(static_cast<size_t>(t_len * v_width));
    std::vector<float> gk(static_cast<size_t>(t_len * k_width));
    std::vector<float> low(static_cast<size_t>(t_len * kGateLowRankDim));
    RowInvariantLinear(x, t_len, d, q_proj_, q.data());
    RowInvariantLinear(x, t_len, d, k_proj_, k.data());
    RowInvariantLinear(x, t_len, d, v_proj_, v.data());
    if (!convs_.empty()) {
      convs_[0].Apply(q.data(), t_len, &state->conv[0]);
      convs_[1].Apply(k.data(), t_len, &state->conv[1]);
      convs_[2].Apply(v.data(), t_len, &state->conv[2]);
    }
    // gk = logsigmoid(gk_proj(x)) / 16, optionally clamped from below.
    RowInvariantLinear(x, t_len, d, gk_down_, low.data());
    RowInvariantLinear(low.data(), t_len, kGateLowRankDim, gk_up_, gk.data());
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < k_width; ++c) {
        float& value = gk[t * k_width + c];
        value = LogSigmoid(value + gk_bias_.data[c]) / kGateLogitNormalizer;
        if (clamp_min_.has_value()) value = std::max(value, static_cast<float>(*clamp_min_));
      }
    }
    if (feature_map_) {
      for (auto& value : q) value = feature_map_(value);
      for (auto& value : k) value = feature_map_(value);
    }
    std::vector<float> o(static_cast<size_t>(t_len * heads * dv));
    GatedLinearAttention(shape_, q.data(), k.data(), v.data(), gk.data(), t_len,
                         state->recurrent.data(), o.data());
    // Per-head RMSNorm over dv (eps = norm_eps), times swish(g_proj(x)) when gated.
    RmsNorm(o.data(), t_len * heads, dv, g_norm_.data.data(), eps_, o.data());
    if (output_gate_) {
      std::vector<float> g(o.size());
      RowInvariantLinear(x, t_len, d, g_proj_, g.data());
      for (size_t j = 0; j < o.size(); ++j) o[j] *= Silu(g[j]);
    }
    RowInvariantLinear(o.data(), t_len, heads * dv, o_proj_, out);
  }

  void set_eps(float eps) { eps_ = eps; }

 private:
  GlaMixer() = default;

  int64_t d_ = 0;
  float eps_ = 1e-6f;
  LinearAttentionShape shape_;
  std::optional<double> clamp_min_;
  std::function<float(float)> feature_map_;
  bool output_gate_ = true;
  HostTensor q_proj_, k_proj_, v_proj_, gk_down_, gk_up_, gk_bias_, g_proj_, g_norm_, o_proj_;
  std::vector<ShortConv> convs_;  // q, k, v when use_short_conv
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildGla(const Checkpoint& checkpoint,
                                                const ModelConfig& config) {
  if (config.family != ModelFamily::kGla) {
    return absl::InvalidArgumentError("BuildGla: the config is not a GLA config");
  }
  CpuModelParts parts;
  for (int64_t l = 0; l < config.num_layers; ++l) {
    HG_ASSIGN_OR_RETURN(auto mixer, GlaMixer::Read(checkpoint, config, l));
    mixer->set_eps(static_cast<float>(config.norm_eps));
    parts.mixers.push_back(std::move(mixer));
  }
  return MakeCpuModel(checkpoint, config, std::move(parts));
}

}  // namespace hgeval::cpu
