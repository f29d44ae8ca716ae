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
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// nn.Linear: weight [out, in], bias [out] when the checkpoint has one.
struct Affine {
  HostTensor weight;
  std::vector<float> bias;

  static absl::StatusOr<Affine> Read(const Checkpoint& checkpoint, const std::string& prefix,
                                     int64_t out, int64_t in) {
    Affine a;
    HG_ASSIGN_OR_RETURN(a.weight, ReadTensor(checkpoint, prefix + ".weight", {out, in}));
    if (checkpoint.Has(prefix + ".bias")) {
      HG_ASSIGN_OR_RETURN(HostTensor bias, ReadTensor(checkpoint, prefix + ".bias", {out}));
      a.bias = std::move(bias.data);
    }
    return a;
  }
  int64_t out() const { return weight.shape[0]; }
  int64_t in() const { return weight.shape[1]; }
  int64_t num_parameters() const { return weight.numel() + static_cast<int64_t>(bias.size()); }
  // y[m, out] = x[m, in] W^T + b.
  void Apply(const float* x, int64_t m, float* y) const {
    Linear(x, m, in(), weight, y);
    if (bias.empty()) return;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t o = 0; o < out(); ++o) y[r * out() + o] += bias[o];
    }
  }
};

// LayerNorm (weight, bias) or eval-mode BatchNorm (weight, bias, running_mean,
// running_var) over the last axis.
struct Norm {
  bool batch = false;
  float eps = 1e-5f;
  std::vector<float> weight, bias, mean, var;

  static absl::StatusOr<Norm> Read(const Checkpoint& checkpoint, const std::string& prefix,
                                   int64_t width, bool batch, double eps) {
    Norm n;
    n.batch = batch;
    n.eps = static_cast<float>(eps);
    auto read = [&](const std::string& name, std::vector<float>* out) -> absl::Status {
      HG_ASSIGN_OR_RETURN(HostTensor t, ReadTensor(checkpoint, prefix + "." + name, {width}));
      *out = std::move(t.data);
      return absl::OkStatus();
    };
    HG_RETURN_IF_ERROR(read("weight", &n.weight));
    HG_RETURN_IF_ERROR(read("bias", &n.bias));
    if (batch) {
      HG_RETURN_IF_ERROR(read("running_mean", &n.mean));
      HG_RETURN_IF_ERROR(read("running_var", &n.var));
      for (float v : n.var) {
        if (v < 0.0f) {
          return absl::InvalidArgumentError(
              absl::StrCat(checkpoint.source(), ": ", prefix, ".running_var has a negative value"));
        }
      }
    }
    return n;
  }
  int64_t num_parameters() const { return 2 * static_cast<int64_t>(weight.size()); }
  void Apply(const float* x, int64_t rows, float* y) const {
    const int64_t w = static_cast<int64_t>(weight.size());
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * w;
      float* yr = y + r * w;
      if (batch) {
        for (int64_t c = 0; c < w; ++c) {
          yr[c] = (xr[c] - mean[c]) / std::sqrt(var[c] + eps) * weight[c] + bias[c];
        }
        continue;
      }
      double sum = 0.0;
      for (int64_t c = 0; c < w; ++c) sum += xr[c];
      const double mu = sum / w;
      double sq = 0.0;
      for (int64_t c = 0; c < w; ++c) sq += (xr[c] - mu) * (xr[c] - mu);
      const double inv = 1.0 / std::sqrt(sq / w + eps);
      for (int64_t c = 0; c < w; ++c) {
        yr[c] = static_cast<float>((xr[c] - mu) * inv) * weight[c] + bias[c];
      }
    }
  }
};

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

class LraMixerLayer {
 public:
  virtual ~LraMixerLayer() = default;
  // x: [T, d] (the norm's output); out: [T, d].
  virtual void Forward(const float* x, int64_t t_len, const std::vector<ScanLines>& lines,
                       float* out) const = 0;
  virtual int64_t num_parameters() const = 0;
};

// HGRN2 (BiHgru2_1d / Hgru2_2d): in_proj -> i = silu, o = sigmoid, f; per head of size e a
// state S[e, e] with S_t = λ_t S_{t-1} + (1 - λ_t) ⊗ i_t, read as o_t · S_t, summed over
// the directions; LayerNorm(d); out_proj.
class Hgrn2Mixer final : public LraMixerLayer {
 public:
  static absl::StatusOr<std::unique_ptr<Hgrn2Mixer>> Read(const Checkpoint& checkpoint,
                                                          const std::string& prefix,
                                                          const LraClassifierConfig& config,
                                                          std::vector<float> bound) {
    auto m = std::make_unique<Hgrn2Mixer>();
    const int64_t d = config.hidden_size;
    m->d_ = d;
    m->e_ = config.expand_ratio;
    m->bound_ = std::move(bound);
    HG_ASSIGN_OR_RETURN(m->in_proj_, Affine::Read(checkpoint, prefix + ".in_proj", 3 * d, d));
    HG_ASSIGN_OR_RETURN(m->out_proj_, Affine::Read(checkpoint, prefix + ".out_proj", d, d));
    if (config.mixer_norm) {
      HG_ASSIGN_OR_RETURN(m->norm_, Norm::Read(checkpoint, prefix + ".norm", d, false, 1e-5));
    }
    return m;
  }

  void Forward(const float* x, int64_t t_len, const std::vector<ScanLines>& lines,
               float* out) const override {
    const int64_t d = d_, e = e_, heads = d / e;
    std::vector<float> feature(t_len * 3 * d);
    in_proj_.Apply(x, t_len, feature.data());
    std::vector<float> input(t_len * d), output_gate(t_len * d), gate, input_scale;
    for (int64_t t = 0; t < t_len; ++t) {
      for (int64_t c = 0; c < d; ++c) {
        input[t * d + c] = Silu(feature[t * 3 * d + c]);
        output_gate[t * d + c] = Sigmoid(feature[t * 3 * d + d + c]);
      }
    }
    Gates(feature.data() + 2 * d, t_len, d, 3 * d, bound_, &gate, &input_scale);
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
              const float* lam = gate.data() + t * d + base;
              const float* k = input_scale.data() + t * d + base;
              const float* v = input.data() + t * d + base;
              const float* q = output_gate.data() + t * d + base;
              float* yt = y.data() + t * d + base;
              for (int64_t a = 0; a < e; ++a) {
                float* row = state.data() + a * e;
                for (int64_t b = 0; b < e; ++b) row[b] = lam[a] * row[b] + k[a] * v[b];
              }
              for (int64_t b = 0; b < e; ++b) {
                float acc = 0.0f;
                for (int64_t a = 0; a < e; ++a) acc += q[a] * state[a * e + b];
                yt[b] += acc;
              }
            }
          }
        }
      }
    });
    if (!norm_.weight.empty()) norm_.Apply(y.data(), t_len, y.data());
    out_proj_.Apply(y.data(), t_len, out);
  }

  int64_t num_parameters() const override {
    return in_proj_.num_parameters() + out_proj_.num_parameters() + norm_.num_parameters();
  }

 private:
  int64_t d_ = 0, e_ = 0;
  std::vector<float> bound_;
  Affine in_proj_, out_proj_;
  Norm norm_;
};

// HGRN1 (BiHgru1d / Hgru2d, non-causal): input_proj -> silu, read as d complex inputs
// (interleaved re, im); λ = lower-bounded sigmoid(lambda_proj); the forward scans rotate by
// theta_forward, the reverse ones by theta_reverse: h_t = λ e^{iθ} h_{t-1} + (1 - λ) x_t;
// the summed states as [re; im] -> LayerNorm(2d) -> * silu(gate) -> out_proj.
class Hgrn1Mixer final : public LraMixerLayer {
 public:
  static absl::StatusOr<std::unique_ptr<Hgrn1Mixer>> Read(const Checkpoint& checkpoint,
                                                          const std::string& prefix,
                                                          const LraClassifierConfig& config,
                                                          std::vector<float> bound) {
    auto m = std::make_unique<Hgrn1Mixer>();
    const int64_t d = config.hidden_size;
    m->d_ = d;
    m->bound_ = std::move(bound);
    HG_ASSIGN_OR_RETURN(m->input_proj_, Affine::Read(checkpoint, prefix + ".input_proj", 2 * d, d));
    HG_ASSIGN_OR_RETURN(m->lambda_proj_, Affine::Read(checkpoint, prefix + ".lambda_proj", d, d));
    HG_ASSIGN_OR_RETURN(m->gate_, Affine::Read(checkpoint, prefix + ".gate", 2 * d, d));
    HG_ASSIGN_OR_RETURN(m->out_proj_, Affine::Read(checkpoint, prefix + ".out_proj", d, 2 * d));
    HG_ASSIGN_OR_RETURN(m->norm_, Norm::Read(checkpoint, prefix + ".norm", 2 * d, false, 1e-5));
    HG_ASSIGN_OR_RETURN(HostTensor forward, ReadTensor(checkpoint, prefix + ".theta_forward", {d}));
    HG_ASSIGN_OR_RETURN(HostTensor reverse, ReadTensor(checkpoint, prefix + ".theta_reverse", {d}));
    m->theta_[0] = std::move(forward.data);
    m->theta_[1] = std::move(reverse.data);
    return m;
  }

  void Forward(const float* x, int64_t t_len, const std::vector<ScanLines>& lines,
               float* out) const override {
    const int64_t d = d_;
    std::vector<float> input(t_len * 2 * d), lambda_pre(t_len * d), gate_pre(t_len * 2 * d);
    input_proj_.Apply(x, t_len, input.data());
    lambda_proj_.Apply(x, t_len, lambda_pre.data());
    gate_.Apply(x, t_len, gate_pre.data());
    for (float& v : input) v = Silu(v);
    std::vector<float> gate, input_scale;
    Gates(lambda_pre.data(), t_len, d, d, bound_, &gate, &input_scale);
    // [re(d) | im(d)] per position.
    std::vector<float> hidden(t_len * 2 * d, 0.0f);
    ParallelFor(d, [&](int64_t c) {
      for (const ScanLines& set : lines) {
        for (int64_t line = 0; line < set.count; ++line) {
          for (int direction = 0; direction < 2; ++direction) {
            const float cos_t = std::cos(theta_[direction][c]);
            const float sin_t = std::sin(theta_[direction][c]);
            float re = 0.0f, im = 0.0f;
            for (int64_t s = 0; s < set.length; ++s) {
              const int64_t step = direction == 0 ? s : set.length - 1 - s;
              const int64_t t = line * set.line_step + step * set.step;
              const float lam = gate[t * d + c];
              const float gr = lam * cos_t, gi = lam * sin_t;
              const float xr = input_scale[t * d + c] * input[t * 2 * d + 2 * c];
              const float xi = input_scale[t * d + c] * input[t * 2 * d + 2 * c + 1];
              const float nr = gr * re - gi * im + xr;
              const float ni = gr * im + gi * re + xi;
              re = nr;
              im = ni;
              hidden[t * 2 * d + c] += re;
              hidden[t * 2 * d + d + c] += im;
            }
          }
        }
      }
    });
    norm_.Apply(hidden.data(), t_len, hidden.data());
    for (size_t i = 0; i < hidden.size(); ++i) hidden[i] *= Silu(gate_pre[i]);
    out_proj_.Apply(hidden.data(), t_len, out);
  }

  int64_t num_parameters() const override {
    return input_proj_.num_parameters() + lambda_proj_.num_parameters() + gate_.num_parameters() +
           out_proj_.num_parameters() + norm_.num_parameters() + 2 * d_;
  }

 private:
  int64_t d_ = 0;
  std::vector<float> bound_;
  Affine input_proj_, lambda_proj_, gate_, out_proj_;
  Norm norm_;
  std::vector<float> theta_[2];
};

struct LraBlock {
  Norm mixer_norm;
  std::unique_ptr<LraMixerLayer> mixer;
  Norm glu_norm;
  Affine l1, l2, l3;  // GLU: l3(silu(l1 x) * l2 x)
};

class CpuLraClassifier final : public LraClassifier {
 public:
  const LraClassifierConfig& config() const override { return config_; }
  int64_t num_parameters() const override { return num_parameters_; }

  absl::Status Classify(absl::Span<const LraInput> inputs,
                        std::vector<std::vector<float>>* logits) const override {
    const size_t documents = config_.head == LraHead::kRetrieval ? 2 : 1;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].documents.size() != documents) {
        return absl::InvalidArgumentError(absl::StrCat("input ", i, ": the model takes ", documents,
                                                       " document(s) per example, got ",
                                                       inputs[i].documents.size()));
      }
      for (const LraDocument& doc : inputs[i].documents) {
        HG_RETURN_IF_ERROR(Validate(doc, i));
      }
    }
    logits->assign(inputs.size(), {});
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<std::vector<float>> pooled;
      for (const LraDocument& doc : inputs[i].documents) pooled.push_back(Encode(doc));
      (*logits)[i] = Head(pooled);
    }
    return absl::OkStatus();
  }

  LraClassifierConfig config_;
  HostTensor embedding;  // [V, d]
  Affine input_encoder;  // [d, C]
  std::vector<LraBlock> blocks;
  Norm final_norm;
  Affine head, head_fc1, head_fc2;
  int64_t num_parameters_ = 0;

 private:
  int64_t Positions(const LraDocument& doc) const {
    return config_.embedding_encoder
               ? static_cast<int64_t>(doc.tokens.size())
               : static_cast<int64_t>(doc.pixels.size()) / config_.input_channels;
  }

  absl::Status Validate(const LraDocument& doc, size_t i) const {
    const std::string where = absl::StrCat("input ", i, ": ");
    if (config_.embedding_encoder) {
      if (!doc.pixels.empty())
        return absl::InvalidArgumentError(where + "the model takes tokens, not pixels");
      for (int32_t token : doc.tokens) {
        if (token < 0 || token >= config_.vocab_size) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "token id ", token, " outside the vocabulary of ", config_.vocab_size));
        }
      }
    } else {
      if (!doc.tokens.empty())
        return absl::InvalidArgumentError(where + "the model takes pixels, not tokens");
      if (doc.pixels.size() % config_.input_channels != 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, doc.pixels.size(),
                                                       " pixel values are not a multiple of ",
                                                       config_.input_channels, " channels"));
      }
      for (float p : doc.pixels) {
        if (!std::isfinite(p))
          return absl::InvalidArgumentError(where + "a pixel value is not finite");
      }
    }
    const int64_t positions = Positions(doc);
    if (positions == 0) return absl::InvalidArgumentError(where + "empty input");
    if (config_.two_d && positions != config_.image_height * config_.image_width) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, positions, " positions, but the model scans ", config_.image_height,
                       "x", config_.image_width, " images"));
    }
    if (doc.pool_length < 0 || doc.pool_length > positions) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "pool_length ", doc.pool_length, " outside [0, ", positions, "]"));
    }
    return absl::OkStatus();
  }

  // The final-norm output mean-pooled over the document's pool_length positions.
  std::vector<float> Encode(const LraDocument& doc) const {
    const int64_t d = config_.hidden_size, t_len = Positions(doc);
    std::vector<float> x(t_len * d);
    if (config_.embedding_encoder) {
      for (int64_t t = 0; t < t_len; ++t) {
        std::copy_n(embedding.data.data() + doc.tokens[t] * d, d, x.data() + t * d);
      }
    } else {
      const int64_t c_len = config_.input_channels;
      std::vector<float> normalised(doc.pixels.size());
      for (size_t i = 0; i < normalised.size(); ++i) {
        const int64_t c = static_cast<int64_t>(i) % c_len;
        normalised[i] = (doc.pixels[i] / 255.0f - config_.input_mean[c]) / config_.input_std[c];
      }
      input_encoder.Apply(normalised.data(), t_len, x.data());
    }
    if (config_.positional) {
      for (int64_t t = 0; t < t_len; ++t) {
        for (int64_t c = 0; c < d; ++c) x[t * d + c] += LraSinusoid(t, c, d);
      }
    }
    const std::vector<ScanLines> lines = LinesOf(config_, t_len);
    std::vector<float> normed(t_len * d), update(t_len * d);
    std::vector<float> a(t_len * config_.glu_size), b(t_len * config_.glu_size);
    for (const LraBlock& block : blocks) {
      block.mixer_norm.Apply(x.data(), t_len, normed.data());
      block.mixer->Forward(normed.data(), t_len, lines, update.data());
      for (size_t i = 0; i < x.size(); ++i) x[i] += update[i];
      block.glu_norm.Apply(x.data(), t_len, normed.data());
      block.l1.Apply(normed.data(), t_len, a.data());
      block.l2.Apply(normed.data(), t_len, b.data());
      for (size_t i = 0; i < a.size(); ++i) a[i] = Silu(a[i]) * b[i];
      block.l3.Apply(a.data(), t_len, update.data());
      for (size_t i = 0; i < x.size(); ++i) x[i] += update[i];
    }
    final_norm.Apply(x.data(), t_len, x.data());
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
      head.Apply(pooled[0].data(), 1, out.data());
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
    std::vector<float> hidden(head_fc1.out());
    head_fc1.Apply(features.data(), 1, hidden.data());
    for (float& h : hidden) h = 0.5f * h * (1.0f + std::erf(h / std::sqrt(2.0f)));
    head_fc2.Apply(hidden.data(), 1, out.data());
    return out;
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<LraClassifier>> BuildLraClassifier(
    const Checkpoint& checkpoint, const LraClassifierConfig& config) {
  auto model = std::make_unique<CpuLraClassifier>();
  model->config_ = config;
  const int64_t d = config.hidden_size;
  const bool batch = config.norm == LraNorm::kBatch;
  int64_t params = 0;
  if (config.embedding_encoder) {
    HG_ASSIGN_OR_RETURN(model->embedding,
                        ReadTensor(checkpoint, "encoder.weight", {config.vocab_size, d}));
    params += model->embedding.numel();
  } else {
    HG_ASSIGN_OR_RETURN(model->input_encoder,
                        Affine::Read(checkpoint, "encoder", d, config.input_channels));
    params += model->input_encoder.num_parameters();
  }
  std::vector<std::vector<float>> bounds;
  if (config.use_lower_bound) {
    HG_ASSIGN_OR_RETURN(bounds, ReadLowerBounds(checkpoint, "lower_bounds", config.num_layers, d));
    params += config.num_layers * d;
  }
  if (checkpoint.Has(absl::StrCat("layers.", config.num_layers, ".mixer_norm.weight"))) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint.source(),
                     ": the checkpoint has more layers than num_layers = ", config.num_layers));
  }
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::string prefix = absl::StrCat("layers.", l);
    LraBlock block;
    std::vector<float> bound = (bounds.empty() || l == 0) ? std::vector<float>() : bounds[l];
    HG_ASSIGN_OR_RETURN(block.mixer_norm,
                        Norm::Read(checkpoint, prefix + ".mixer_norm", d, batch, config.norm_eps));
    if (config.mixer == LraMixer::kHgrn2) {
      HG_ASSIGN_OR_RETURN(
          block.mixer, Hgrn2Mixer::Read(checkpoint, prefix + ".mixer", config, std::move(bound)));
    } else {
      HG_ASSIGN_OR_RETURN(
          block.mixer, Hgrn1Mixer::Read(checkpoint, prefix + ".mixer", config, std::move(bound)));
    }
    HG_ASSIGN_OR_RETURN(block.glu_norm,
                        Norm::Read(checkpoint, prefix + ".glu_norm", d, batch, config.norm_eps));
    HG_ASSIGN_OR_RETURN(block.l1, Affine::Read(checkpoint, prefix + ".glu.l1", config.glu_size, d));
    HG_ASSIGN_OR_RETURN(block.l2, Affine::Read(checkpoint, prefix + ".glu.l2", config.glu_size, d));
    HG_ASSIGN_OR_RETURN(block.l3, Affine::Read(checkpoint, prefix + ".glu.l3", d, config.glu_size));
    params += block.mixer_norm.num_parameters() + block.mixer->num_parameters() +
              block.glu_norm.num_parameters() + block.l1.num_parameters() +
              block.l2.num_parameters() + block.l3.num_parameters();
    model->blocks.push_back(std::move(block));
  }
  HG_ASSIGN_OR_RETURN(model->final_norm,
                      Norm::Read(checkpoint, "final_norm", d, batch, config.norm_eps));
  params += model->final_norm.num_parameters();
  if (config.head == LraHead::kLinear) {
    HG_ASSIGN_OR_RETURN(model->head, Affine::Read(checkpoint, "head", config.num_classes, d));
    params += model->head.num_parameters();
  } else {
    HG_ASSIGN_OR_RETURN(model->head_fc1, Affine::Read(checkpoint, "head.fc1", d, 4 * d));
    HG_ASSIGN_OR_RETURN(model->head_fc2,
                        Affine::Read(checkpoint, "head.fc2", config.num_classes, d));
    params += model->head_fc1.num_parameters() + model->head_fc2.num_parameters();
  }
  model->num_parameters_ = params;
  return model;
}

}  // namespace hgeval::cpu
