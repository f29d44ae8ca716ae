#include "engine/cpu/fla_block.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {

size_t MixerState::bytes() const {
  size_t total = recurrent.size() * sizeof(float);
  for (const auto& window : conv) total += window.size() * sizeof(float);
  return total;
}

size_t RecurrentSequenceState::bytes() const {
  size_t total = sizeof(*this);
  for (const auto& layer : layers_) total += layer.bytes();
  return total;
}

absl::StatusOr<HostTensor> ReadTensor(const Checkpoint& checkpoint, const std::string& name,
                                      std::vector<int64_t> shape) {
  return checkpoint.ReadFloat(name, shape);
}

absl::StatusOr<ShortConv> ShortConv::Read(const Checkpoint& checkpoint, const std::string& prefix,
                                          int64_t channels, int64_t kernel, bool silu) {
  if (kernel < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: conv_size must be positive, got ", kernel));
  }
  ShortConv conv;
  conv.channels_ = channels;
  conv.kernel_ = kernel;
  conv.silu_ = silu;
  HG_ASSIGN_OR_RETURN(HostTensor weight,
                      ReadTensor(checkpoint, prefix + ".weight", {channels, 1, kernel}));
  conv.weight_ = std::move(weight.data);
  if (checkpoint.Has(prefix + ".bias")) {
    HG_ASSIGN_OR_RETURN(HostTensor bias, ReadTensor(checkpoint, prefix + ".bias", {channels}));
    conv.bias_ = std::move(bias.data);
  }
  return conv;
}

int64_t ShortConv::num_parameters() const {
  return static_cast<int64_t>(weight_.size() + bias_.size());
}

std::vector<float> ShortConv::NewWindow() const {
  return std::vector<float>(static_cast<size_t>((kernel_ - 1) * channels_), 0.0f);
}

MixerState NewMixerState(int64_t recurrent_floats, const std::vector<ShortConv>& convs) {
  MixerState state;
  state.recurrent.assign(static_cast<size_t>(recurrent_floats), 0.0f);
  for (const ShortConv& conv : convs) state.conv.push_back(conv.NewWindow());
  return state;
}

int64_t ShortConvParameters(const std::vector<ShortConv>& convs) {
  int64_t n = 0;
  for (const ShortConv& conv : convs) n += conv.num_parameters();
  return n;
}

void ShortConv::Apply(float* x, int64_t t_len, std::vector<float>* window) const {
  const int64_t c_len = channels_;
  const int64_t past = kernel_ - 1;
  // Inputs in time order: the window's K-1 rows, then x's T rows.
  std::vector<float> in(static_cast<size_t>((past + t_len) * c_len));
  std::copy(window->begin(), window->end(), in.begin());
  std::copy_n(x, t_len * c_len, in.begin() + past * c_len);
  for (int64_t t = 0; t < t_len; ++t) {
    float* y = x + t * c_len;
    for (int64_t c = 0; c < c_len; ++c) {
      // Cross-correlation as torch's conv1d: y[t] = sum_j w[j] * in[t + j] (in is offset by
      // K-1, so in[t + K-1] is the current token).
      float acc = bias_.empty() ? 0.0f : bias_[c];
      const float* w = weight_.data() + c * kernel_;
      for (int64_t j = 0; j < kernel_; ++j) acc += w[j] * in[(t + j) * c_len + c];
      y[c] = silu_ ? Silu(acc) : acc;
    }
  }
  std::copy_n(in.begin() + t_len * c_len, past * c_len, window->begin());
}

namespace {

struct FlaBlock {
  HostTensor attn_norm;  // [D]
  HostTensor mlp_norm;   // [D]
  GatedMlpWeights mlp;
  std::unique_ptr<TokenMixer> mixer;
};

class FlaModel final : public Model {
 public:
  FlaModel(ModelConfig config, ModelInfo info, HostTensor embeddings, std::vector<FlaBlock> blocks,
           HostTensor norm, HostTensor lm_head)
      : config_(std::move(config)),
        info_(std::move(info)),
        embeddings_(std::move(embeddings)),
        blocks_(std::move(blocks)),
        norm_(std::move(norm)),
        lm_head_(std::move(lm_head)) {}

  const ModelInfo& info() const override { return info_; }
  const ModelConfig& config() const override { return config_; }

  std::unique_ptr<SequenceState> NewState() const override {
    std::vector<MixerState> layers;
    layers.reserve(blocks_.size());
    for (const auto& block : blocks_) layers.push_back(block.mixer->NewState());
    return std::make_unique<RecurrentSequenceState>(this, std::move(layers));
  }

  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    std::vector<std::unique_ptr<SequenceState>> copies;
    HG_ASSIGN_OR_RETURN(
        std::vector<RecurrentSequenceState*> states,
        OwnStates<RecurrentSequenceState>(this, items, outputs, info_.vocab_size, &copies));
    // Each item runs alone (its own GEMMs), so its results cannot depend on the others.
    for (size_t i = 0; i < items.size(); ++i) RunItem(items[i], states[i], &outputs[i]);
    return absl::OkStatus();
  }

 private:
  void RunItem(const ForwardItem& item, RecurrentSequenceState* state, ForwardOutput* out) const {
    const int64_t d = config_.hidden_size;
    const int64_t t_len = static_cast<int64_t>(item.tokens.size());
    const float eps = static_cast<float>(config_.norm_eps);
    std::vector<float> h(static_cast<size_t>(t_len * d));
    std::vector<float> x(h.size()), a(h.size());
    for (int64_t t = 0; t < t_len; ++t) {
      std::copy_n(embeddings_.data.data() + static_cast<int64_t>(item.tokens[t]) * d, d,
                  h.data() + t * d);
    }
    for (size_t l = 0; l < blocks_.size(); ++l) {
      const FlaBlock& block = blocks_[l];
      RmsNorm(h.data(), t_len, d, block.attn_norm.data.data(), eps, x.data());
      block.mixer->Forward(x.data(), t_len, &state->layer(static_cast<int64_t>(l)), a.data());
      // Fused add+norm: the residual becomes a + h; the MLP sees its norm.
      for (size_t j = 0; j < h.size(); ++j) h[j] += a[j];
      RmsNorm(h.data(), t_len, d, block.mlp_norm.data.data(), eps, x.data());
      RowInvariantGatedMlp(x.data(), t_len, block.mlp.gate, block.mlp.up, block.mlp.down, a.data());
      for (size_t j = 0; j < h.size(); ++j) h[j] += a[j];
    }
    RmsNorm(h.data(), t_len, d, norm_.data.data(), eps, x.data());
    ScoreHead(x.data(), d, lm_head_, item, out);
    state->Advance(t_len);
  }

  ModelConfig config_;
  ModelInfo info_;
  HostTensor embeddings_;  // [V, D]
  std::vector<FlaBlock> blocks_;
  HostTensor norm_;     // [D]
  HostTensor lm_head_;  // [V, D]
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildFlaModel(
    const Checkpoint& checkpoint, const ModelConfig& config,
    std::vector<std::unique_ptr<TokenMixer>> mixers, int64_t extra_parameters) {
  const int64_t d = config.hidden_size;
  const int64_t vocab = config.vocab_size;
  if (static_cast<int64_t>(mixers.size()) != config.num_layers) {
    return absl::InternalError("BuildFlaModel: one token mixer per layer is needed");
  }
  const BlockTensorNames names = BlockTensorNamesFor(checkpoint, config);
  HG_ASSIGN_OR_RETURN(HostTensor embeddings, ReadTensor(checkpoint, names.embed, {vocab, d}));
  int64_t params = embeddings.numel() + extra_parameters;
  std::vector<FlaBlock> blocks(mixers.size());
  for (int64_t l = 0; l < config.num_layers; ++l) {
    FlaBlock& block = blocks[l];
    HG_ASSIGN_OR_RETURN(block.attn_norm, ReadTensor(checkpoint, names.Norm1Weight(l), {d}));
    HG_ASSIGN_OR_RETURN(block.mlp_norm, ReadTensor(checkpoint, names.Norm2Weight(l), {d}));
    HG_ASSIGN_OR_RETURN(block.mlp, ReadBlockMlp(checkpoint, config, l));
    block.mixer = std::move(mixers[l]);
    params += block.attn_norm.numel() + block.mlp_norm.numel() + block.mlp.gate.numel() +
              block.mlp.up.numel() + block.mlp.down.numel() + block.mixer->num_parameters();
  }
  HG_ASSIGN_OR_RETURN(HostTensor norm, ReadTensor(checkpoint, names.final_norm, {d}));
  params += norm.numel();
  const bool head_stored = checkpoint.Has(names.head);
  HG_ASSIGN_OR_RETURN(HostTensor lm_head, ReadLmHead(checkpoint, names.head, names.embed,
                                                     config.tie_word_embeddings, vocab, d));
  if (head_stored && !config.tie_word_embeddings) params += lm_head.numel();

  ModelInfo info = CpuModelInfo(config, params);
  return std::unique_ptr<Model>(new FlaModel(config, std::move(info), std::move(embeddings),
                                             std::move(blocks), std::move(norm),
                                             std::move(lm_head)));
}

}  // namespace hgeval::cpu
