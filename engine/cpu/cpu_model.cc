#include "engine/cpu/cpu_model.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {

size_t MixerState::bytes() const {
  size_t total = (recurrent.size() + keys.size() + values.size()) * sizeof(float) +
                 recurrent64.size() * sizeof(double);
  for (const auto& window : conv) total += window.size() * sizeof(float);
  return total;
}

size_t CpuSequenceState::bytes() const {
  size_t total = sizeof(*this);
  for (const auto& layer : layers_) total += layer.bytes();
  return total;
}

namespace {

struct CpuBlock {
  HostTensor norm1;  // [D]; empty without norm weights
  HostTensor norm2;  // [D]; empty without norm weights or MLP
  GatedMlpWeights mlp;
  GatedMlpWeights mlp_bias;  // empty tensors without biases
  std::unique_ptr<TokenMixer> mixer;
};

// Buffers for one item, sized for its T tokens.
struct CpuScratch {
  std::vector<float> hidden, normed, delta, gate, up;
};

class CpuModel final : public Model {
 public:
  CpuModel(ModelConfig config, ModelInfo info, CpuBlockLayout layout, HostTensor embeddings,
           std::vector<CpuBlock> blocks, HostTensor final_norm, HostTensor lm_head)
      : config_(std::move(config)),
        info_(std::move(info)),
        layout_(layout),
        eps_(layout_.norm_eps.value_or(static_cast<float>(config_.norm_eps))),
        embeddings_(std::move(embeddings)),
        blocks_(std::move(blocks)),
        final_norm_(std::move(final_norm)),
        lm_head_(std::move(lm_head)) {}

  const ModelInfo& info() const override { return info_; }
  const ModelConfig& config() const override { return config_; }

  std::unique_ptr<SequenceState> NewState() const override {
    std::vector<MixerState> layers;
    layers.reserve(blocks_.size());
    for (const CpuBlock& block : blocks_) layers.push_back(block.mixer->NewState());
    return std::make_unique<CpuSequenceState>(this, std::move(layers));
  }

  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    std::vector<std::unique_ptr<SequenceState>> copies;
    // Checks every item (positions within max_context too) before advancing any state, so
    // a rejected batch changes nothing.
    HG_ASSIGN_OR_RETURN(std::vector<CpuSequenceState*> states,
                        OwnStates<CpuSequenceState>(this, items, outputs, config_.vocab_size,
                                                    &copies, info_.max_context));
    // Each item runs alone (its own matrix products), so batch companions cannot change it.
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].tokens.empty()) {
        outputs[i] = ForwardOutput();
        continue;
      }
      RunItem(items[i], states[i], &outputs[i]);
    }
    return absl::OkStatus();
  }

 private:
  // One non-empty item: feeds its tokens, advances `state` and scores into `out`.
  void RunItem(const ForwardItem& item, CpuSequenceState* state, ForwardOutput* out) {
    const int64_t t_len = static_cast<int64_t>(item.tokens.size());
    const int64_t d = config_.hidden_size;
    const size_t n = static_cast<size_t>(t_len * d);
    CpuScratch& s = scratch_;
    s.hidden.resize(n);
    s.normed.resize(n);
    s.delta.resize(n);
    for (int64_t t = 0; t < t_len; ++t) {
      const float* row = &embeddings_.data[static_cast<int64_t>(item.tokens[t]) * d];
      float* h = &s.hidden[t * d];
      if (layout_.embedding_scale == 1.0f) {
        std::memcpy(h, row, d * sizeof(float));
      } else {
        for (int64_t i = 0; i < d; ++i) h[i] = row[i] * layout_.embedding_scale;
      }
    }
    const int64_t position = state->position();
    for (size_t l = 0; l < blocks_.size(); ++l) {
      CpuBlock& block = blocks_[l];
      Norm(s.hidden.data(), t_len, block.norm1, s.normed.data());
      block.mixer->Forward(s.normed.data(), t_len, position, &state->layer(static_cast<int64_t>(l)),
                           s.delta.data());
      for (size_t j = 0; j < n; ++j) s.hidden[j] += s.delta[j];
      if (!layout_.mlp) continue;
      Norm(s.hidden.data(), t_len, block.norm2, s.normed.data());
      Mlp(block, s.normed.data(), t_len, s.delta.data());
      for (size_t j = 0; j < n; ++j) s.hidden[j] += s.delta[j];
    }
    state->Advance(t_len);
    Norm(s.hidden.data(), t_len, final_norm_, s.normed.data());
    ScoreHead(s.normed.data(), d, lm_head_, item, out);
  }

  // RMSNorm over D; without a weight (empty: TNL's SimpleRMSNorm) no affine.
  void Norm(const float* x, int64_t rows, const HostTensor& weight, float* out) const {
    RmsNorm(x, rows, config_.hidden_size, weight.data.empty() ? nullptr : weight.data.data(), eps_,
            out);
  }

  // SwiGLU, or (TNL) a GLU without activation whose projections may carry biases:
  // out = down(gate(x) * up(x)).
  void Mlp(const CpuBlock& block, const float* x, int64_t t_len, float* out) {
    const GatedMlpWeights& w = block.mlp;
    if (layout_.mlp_silu) {
      RowInvariantGatedMlp(x, t_len, w.gate, w.up, w.down, out);
      return;
    }
    const int64_t d = config_.hidden_size;
    const int64_t g = w.gate.shape[0];
    std::vector<float>& a = scratch_.gate;
    std::vector<float>& b = scratch_.up;
    a.resize(static_cast<size_t>(t_len * g));
    b.resize(a.size());
    RowInvariantLinear(x, t_len, d, w.gate, a.data());
    AddBias(a.data(), t_len, g, block.mlp_bias.gate);
    RowInvariantLinear(x, t_len, d, w.up, b.data());
    AddBias(b.data(), t_len, g, block.mlp_bias.up);
    for (int64_t i = 0; i < t_len * g; ++i) a[i] *= b[i];
    RowInvariantLinear(a.data(), t_len, g, w.down, out);
    AddBias(out, t_len, d, block.mlp_bias.down);
  }

  ModelConfig config_;
  ModelInfo info_;
  CpuBlockLayout layout_;
  float eps_;
  HostTensor embeddings_;  // [V, D]
  std::vector<CpuBlock> blocks_;
  HostTensor final_norm_;  // [D]; empty without norm weights
  HostTensor lm_head_;     // [V, D]
  CpuScratch scratch_;
};

// What every CPU model reports: fp32 on the CPU, the config's family and special tokens.
ModelInfo CpuModelInfo(const ModelConfig& c, const CpuBlockLayout& layout, int64_t num_parameters) {
  return ModelInfo{.family = c.family,
                   .vocab_size = c.vocab_size,
                   .max_context = layout.max_context,
                   .bos_token_id = c.bos_token_id,
                   .eos_token_id = c.eos_token_id,
                   .num_parameters = num_parameters,
                   .backend = "cpu",
                   .dtype = "fp32",
                   .state_bytes_per_token = layout.state_bytes_per_token,
                   .forks_are_exact = true};  // docs/cpu.md
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> MakeCpuModel(const Checkpoint& checkpoint,
                                                    const ModelConfig& config,
                                                    CpuModelParts parts) {
  const CpuBlockLayout& layout = parts.layout;
  const int64_t d = config.hidden_size;
  if (static_cast<int64_t>(parts.mixers.size()) != config.num_layers) {
    return absl::InternalError("MakeCpuModel: one token mixer per layer is needed");
  }
  if (!parts.mlp_biases.empty() &&
      (layout.mlp_silu || parts.mlp_biases.size() != parts.mixers.size())) {
    return absl::InternalError("MakeCpuModel: MLP biases go with a GLU, one set per layer");
  }
  const BlockTensorNames names = BlockTensorNamesFor(checkpoint, config);
  CountingReader read(checkpoint);
  read.Count(parts.extra_parameters);
  HG_ASSIGN_OR_RETURN(HostTensor embeddings, read(names.embed, {config.vocab_size, d}));
  std::vector<CpuBlock> blocks(parts.mixers.size());
  for (int64_t l = 0; l < config.num_layers; ++l) {
    CpuBlock& block = blocks[l];
    if (layout.norm_weights) {
      HG_ASSIGN_OR_RETURN(block.norm1, read(names.Norm1Weight(l), {d}));
    }
    if (layout.mlp) {
      if (layout.norm_weights) {
        HG_ASSIGN_OR_RETURN(block.norm2, read(names.Norm2Weight(l), {d}));
      }
      HG_ASSIGN_OR_RETURN(block.mlp, ReadBlockMlp(checkpoint, config, l));
      read.Count(block.mlp.gate.numel() + block.mlp.up.numel() + block.mlp.down.numel());
    }
    if (!parts.mlp_biases.empty()) {
      block.mlp_bias = std::move(parts.mlp_biases[l]);
      read.Count(block.mlp_bias.gate.numel() + block.mlp_bias.up.numel() +
                 block.mlp_bias.down.numel());
    }
    block.mixer = std::move(parts.mixers[l]);
    read.Count(block.mixer->num_parameters());
  }
  HostTensor final_norm;
  if (layout.norm_weights) {
    HG_ASSIGN_OR_RETURN(final_norm, read(names.final_norm, {d}));
  }
  HG_ASSIGN_OR_RETURN(HostTensor lm_head, read.ReadHead(names, config));

  ModelInfo info = CpuModelInfo(config, layout, read.parameters());
  return std::unique_ptr<Model>(new CpuModel(config, std::move(info), layout, std::move(embeddings),
                                             std::move(blocks), std::move(final_norm),
                                             std::move(lm_head)));
}

bool IsCpuModel(const Model& model) { return dynamic_cast<const CpuModel*>(&model) != nullptr; }

}  // namespace hgeval::cpu
