// Reads top to bottom like the OpenNLPLab reference (specs/niah-mqar-lra.md C.2):
// encoder -> (+ positions) -> n x [x += mixer(norm(x)); x += glu(norm(x))] -> norm ->
// mean pool -> head. The bidirectional scans run per line of positions: one line (the
// sequence) forward and reversed in 1-D; every row and every column, both ways, in 2-D.
#include "engine/cpu/lra_classifier.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cpu/fla_block.h"
#include "engine/cpu/ops.h"
#include "engine/model/lra_scan_step.h"
#include "engine/model/lra_weights.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// y[m, out] = x[m, in] W^T + b.
void ApplyLinear(const LraLinearWeights& a, const float* x, int64_t m, float* y) {
  Linear(x, m, a.in(), a.weight, y);
  if (a.bias.empty()) return;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t o = 0; o < a.out(); ++o) y[r * a.out() + o] += a.bias[o];
  }
}

// LayerNorm, or BatchNorm with the running statistics, over each row of `rows`.
void ApplyNorm(const LraNormWeights& n, const float* x, int64_t rows, float* y) {
  const int64_t w = n.width();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * w;
    float* yr = y + r * w;
    if (n.batch) {
      for (int64_t c = 0; c < w; ++c) {
        yr[c] = (xr[c] - n.running_mean[c]) / std::sqrt(n.running_var[c] + n.eps) * n.weight[c] +
                n.bias[c];
      }
      continue;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < w; ++c) sum += xr[c];
    const double mu = sum / w;
    double sq = 0.0;
    for (int64_t c = 0; c < w; ++c) sq += (xr[c] - mu) * (xr[c] - mu);
    const double inv = 1.0 / std::sqrt(sq / w + n.eps);
    for (int64_t c = 0; c < w; ++c) {
      yr[c] = static_cast<float>((xr[c] - mu) * inv) * n.weight[c] + n.bias[c];
    }
  }
}

// The lines a scan runs along: `count` lines of `length` positions, line i starting at
// i * line_step and advancing by `step`.
struct ScanLines {
  int64_t count, length, line_step, step;
};

std::vector<ScanLines> LinesOf(const LraClassifierConfig& config, int64_t positions) {
  if (!config.two_d) return {{1, positions, 0, 1}};
  const int64_t h = config.image_height, w = config.image_width;
  return {{h, w, w, 1}, {w, h, 1, w}};  // rows, then columns
}

// Per position and channel: the forget gate λ and 1 - λ (fla's lower-bounded gate).
void Gates(const float* f, int64_t rows, int64_t width, int64_t stride,
           const std::vector<float>& bound, std::vector<float>* gate,
           std::vector<float>* input_scale) {
  gate->resize(rows * width);
  input_scale->resize(rows * width);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t c = 0; c < width; ++c) {
      const ForgetGate g =
          LowerBoundedForgetGate(f[t * stride + c], bound.empty() ? 0.0 : bound[c]);
      (*gate)[t * width + c] = static_cast<float>(std::exp(g.log_gate));
      (*input_scale)[t * width + c] = static_cast<float>(g.one_minus_gate);
    }
  }
}

// HGRN2 (BiHgru2_1d / Hgru2_2d): in_proj -> i = silu, o = sigmoid, f; per head of size e a
// state S[e, e] with S_t = λ_t S_{t-1} + (1 - λ_t) ⊗ i_t, read as o_t · S_t, summed over
// the directions; LayerNorm(d); out_proj. x: [T, d] (the norm's output); out: [T, d].
void Hgrn2Forward(const LraHgrn2MixerWeights& w, const std::vector<float>& bound, int64_t e,
                  const float* x, int64_t t_len, const std::vector<ScanLines>& lines, float* out) {
  const int64_t d = w.out_proj.out(), heads = d / e;
  std::vector<float> feature(t_len * 3 * d);
  ApplyLinear(w.in_proj, x, t_len, feature.data());
  std::vector<float> input(t_len * d), output_gate(t_len * d), gate, input_scale;
  for (int64_t t = 0; t < t_len; ++t) {
    for (int64_t c = 0; c < d; ++c) {
      input[t * d + c] = Silu(feature[t * 3 * d + c]);
      output_gate[t * d + c] = Sigmoid(feature[t * 3 * d + d + c]);
    }
  }
  Gates(feature.data() + 2 * d, t_len, d, 3 * d, bound, &gate, &input_scale);
  std::vector<float> y(t_len * d, 0.0f);
  ParallelFor(heads, [&](int64_t h) {
    std::vector<float> state(e * e);
    const int64_t base = h * e;
    for (const ScanLines& set : lines) {
      for (int64_t line = 0; line < set.count; ++line) {
        for (int direction = 0; direction < 2; ++direction) {
          std::fill(state.begin(), state.end(), 0.0f);
          for (int64_t s = 0; s < set.length; ++s) {
            const int64_t step = direction == 0 ? s : set.length - 1 - s;
            const int64_t t = line * set.line_step + step * set.step;
            const int64_t at = t * d + base;
            for (int64_t b = 0; b < e; ++b) {  // state column b: state[b * e, (b + 1) * e)
              y[at + b] += LraHgrn2Step<0>(gate.data() + at, input_scale.data() + at,
                                           output_gate.data() + at, input[at + b],
                                           static_cast<int>(e), state.data() + b * e);
            }
          }
        }
      }
    }
  });
  if (w.has_norm) ApplyNorm(w.norm, y.data(), t_len, y.data());
  ApplyLinear(w.out_proj, y.data(), t_len, out);
}

// HGRN1 (BiHgru1d / Hgru2d, non-causal): input_proj -> silu, read as d complex inputs
// (interleaved re, im); λ = lower-bounded sigmoid(lambda_proj); the forward scans rotate by
// theta_forward, the reverse ones by theta_reverse: h_t = λ e^{iθ} h_{t-1} + (1 - λ) x_t;
// the summed states as [re; im] -> LayerNorm(2d) -> * silu(gate) -> out_proj.
void Hgrn1Forward(const LraHgrn1MixerWeights& w, const std::vector<float>& bound, const float* x,
                  int64_t t_len, const std::vector<ScanLines>& lines, float* out) {
  const int64_t d = w.lambda_proj.out();
  const std::vector<float>* theta[2] = {&w.theta_forward, &w.theta_reverse};
  std::vector<float> input(t_len * 2 * d), lambda_pre(t_len * d), gate_pre(t_len * 2 * d);
  ApplyLinear(w.input_proj, x, t_len, input.data());
  ApplyLinear(w.lambda_proj, x, t_len, lambda_pre.data());
  ApplyLinear(w.gate, x, t_len, gate_pre.data());
  for (float& v : input) v = Silu(v);
  std::vector<float> gate, input_scale;
  Gates(lambda_pre.data(), t_len, d, d, bound, &gate, &input_scale);
  // [re(d) | im(d)] per position.
  std::vector<float> hidden(t_len * 2 * d, 0.0f);
  ParallelFor(d, [&](int64_t c) {
    for (const ScanLines& set : lines) {
      for (int64_t line = 0; line < set.count; ++line) {
        for (int direction = 0; direction < 2; ++direction) {
          const float cos_t = std::cos((*theta[direction])[c]);
          const float sin_t = std::sin((*theta[direction])[c]);
          float re = 0.0f, im = 0.0f;
          for (int64_t s = 0; s < set.length; ++s) {
            const int64_t step = direction == 0 ? s : set.length - 1 - s;
            const int64_t t = line * set.line_step + step * set.step;
            LraHgrn1Step(gate[t * d + c], cos_t, sin_t, input_scale[t * d + c],
                         input[t * 2 * d + 2 * c], input[t * 2 * d + 2 * c + 1], &re, &im);
            hidden[t * 2 * d + c] += re;
            hidden[t * 2 * d + d + c] += im;
          }
        }
      }
    }
  });
  ApplyNorm(w.norm, hidden.data(), t_len, hidden.data());
  for (size_t i = 0; i < hidden.size(); ++i) hidden[i] *= Silu(gate_pre[i]);
  ApplyLinear(w.out_proj, hidden.data(), t_len, out);
}

class CpuLraClassifier final : public LraClassifier {
 public:
  CpuLraClassifier(LraClassifierConfig config, LraClassifierWeights weights)
      : config_(std::move(config)), w_(std::move(weights)) {}

  const LraClassifierConfig& config() const override { return config_; }
  int64_t num_parameters() const override { return w_.num_parameters; }
  std::string backend() const override { return "cpu"; }

  absl::Status Classify(absl::Span<const LraInput> inputs,
                        std::vector<std::vector<float>>* logits) const override {
    HG_RETURN_IF_ERROR(ValidateLraInputs(config_, inputs));
    logits->assign(inputs.size(), {});
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<std::vector<float>> pooled;
      for (const LraDocument& doc : inputs[i].documents) pooled.push_back(Encode(doc));
      (*logits)[i] = Head(pooled);
    }
    return absl::OkStatus();
  }

 private:
  // The final-norm output mean-pooled over the document's pool_length positions.
  std::vector<float> Encode(const LraDocument& doc) const {
    const int64_t d = config_.hidden_size, t_len = LraPositions(config_, doc);
    std::vector<float> x(t_len * d);
    if (config_.embedding_encoder) {
      for (int64_t t = 0; t < t_len; ++t) {
        std::copy_n(w_.embedding.data.data() + doc.tokens[t] * d, d, x.data() + t * d);
      }
    } else {
      const std::vector<float> normalised = NormalisedLraPixels(config_, doc.pixels);
      ApplyLinear(w_.input_encoder, normalised.data(), t_len, x.data());
    }
    if (config_.positional) {
      for (int64_t t = 0; t < t_len; ++t) {
        for (int64_t c = 0; c < d; ++c) x[t * d + c] += LraSinusoid(t, c, d);
      }
    }
    const std::vector<ScanLines> lines = LinesOf(config_, t_len);
    std::vector<float> normed(t_len * d), update(t_len * d);
    std::vector<float> a(t_len * config_.glu_size), b(t_len * config_.glu_size);
    for (const LraLayerWeights& layer : w_.layers) {
      ApplyNorm(layer.mixer_norm, x.data(), t_len, normed.data());
      if (config_.mixer == LraMixer::kHgrn2) {
        Hgrn2Forward(layer.hgrn2, layer.lower_bound, config_.expand_ratio, normed.data(), t_len,
                     lines, update.data());
      } else {
        Hgrn1Forward(layer.hgrn1, layer.lower_bound, normed.data(), t_len, lines, update.data());
      }
      for (size_t i = 0; i < x.size(); ++i) x[i] += update[i];
      ApplyNorm(layer.glu_norm, x.data(), t_len, normed.data());
      ApplyLinear(layer.l1, normed.data(), t_len, a.data());
      ApplyLinear(layer.l2, normed.data(), t_len, b.data());
      for (size_t i = 0; i < a.size(); ++i) a[i] = Silu(a[i]) * b[i];
      ApplyLinear(layer.l3, a.data(), t_len, update.data());
      for (size_t i = 0; i < x.size(); ++i) x[i] += update[i];
    }
    ApplyNorm(w_.final_norm, x.data(), t_len, x.data());
    const int64_t pooled_positions = doc.pool_length > 0 ? doc.pool_length : t_len;
    std::vector<double> sum(d, 0.0);
    for (int64_t t = 0; t < pooled_positions; ++t) {
      for (int64_t c = 0; c < d; ++c) sum[c] += x[t * d + c];
    }
    std::vector<float> pooled(d);
    for (int64_t c = 0; c < d; ++c) pooled[c] = static_cast<float>(sum[c] / pooled_positions);
    return pooled;
  }

  std::vector<float> Head(const std::vector<std::vector<float>>& pooled) const {
    std::vector<float> out(config_.num_classes);
    if (config_.head == LraHead::kLinear) {
      ApplyLinear(w_.head, pooled[0].data(), 1, out.data());
      return out;
    }
    // RetrievalDecoder (nli): [u, v, u - v, u * v] -> Linear -> GELU -> Linear.
    const int64_t d = config_.hidden_size;
    const std::vector<float>& u = pooled[0];
    const std::vector<float>& v = pooled[1];
    std::vector<float> features(4 * d);
    for (int64_t c = 0; c < d; ++c) {
      features[c] = u[c];
      features[d + c] = v[c];
      features[2 * d + c] = u[c] - v[c];
      features[3 * d + c] = u[c] * v[c];
    }
    std::vector<float> hidden(w_.head_fc1.out());
    ApplyLinear(w_.head_fc1, features.data(), 1, hidden.data());
    for (float& h : hidden) h = 0.5f * h * (1.0f + std::erf(h / std::sqrt(2.0f)));
    ApplyLinear(w_.head_fc2, hidden.data(), 1, out.data());
    return out;
  }

  LraClassifierConfig config_;
  LraClassifierWeights w_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LraClassifier>> BuildLraClassifier(
    const Checkpoint& checkpoint, const LraClassifierConfig& config) {
  HG_ASSIGN_OR_RETURN(LraClassifierWeights weights, ReadLraClassifierWeights(checkpoint, config));
  return std::make_unique<CpuLraClassifier>(config, std::move(weights));
}

}  // namespace hgeval::cpu
