// LLaMA (Hugging Face LlamaForCausalLM; fla "transformer" checkpoints by renaming keys) on
// the CPU in fp32: RMSNorm, RoPE (rotate_half), GQA causal softmax attention over a KV cache
// held in the sequence state, SwiGLU MLP. See specs/models.md §5.
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu/attention.h"
#include "engine/cpu/cpu_model_base.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/ops.h"
#include "engine/cpu/rope.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/family_table.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// Per layer: keys and values of every consumed position, [position, kv_heads * head_dim].
class LlamaState : public SequenceState {
 public:
  LlamaState(const void* owner, int64_t layers) : owner_(owner), keys_(layers), values_(layers) {}

  int64_t position() const override { return position_; }
  std::unique_ptr<SequenceState> Clone() const override {
    return std::make_unique<LlamaState>(*this);
  }
  size_t bytes() const override {
    size_t total = sizeof(*this);
    for (size_t l = 0; l < keys_.size(); ++l) {
      total += (keys_[l].size() + values_[l].size()) * sizeof(float);
    }
    return total;
  }

  const void* owner() const { return owner_; }
  std::vector<float>& keys(int64_t layer) { return keys_[layer]; }
  std::vector<float>& values(int64_t layer) { return values_[layer]; }
  void Advance(int64_t tokens) { position_ += tokens; }

 private:
  const void* owner_;
  int64_t position_ = 0;
  std::vector<std::vector<float>> keys_;
  std::vector<std::vector<float>> values_;
};

struct LlamaLayer {
  HostTensor attn_norm;  // [D]
  HostTensor q_proj;     // [H*hd, D]
  HostTensor k_proj;     // [Hkv*hd, D]
  HostTensor v_proj;     // [Hkv*hd, D]
  HostTensor o_proj;     // [D, H*hd]
  HostTensor mlp_norm;   // [D]
  GatedMlpWeights mlp;
};

// Scratch buffers for one item, sized for T tokens.
struct LlamaScratch {
  std::vector<float> hidden, normed, q, k, v, attn, mlp, cos, sin;
};

class LlamaModel final : public CpuModelBase<LlamaState> {
 public:
  LlamaModel(ModelConfig config, ModelInfo info, HostTensor embeddings,
             std::vector<LlamaLayer> layers, HostTensor final_norm, HostTensor lm_head)
      : CpuModelBase(std::move(config), std::move(info)),
        embeddings_(std::move(embeddings)),
        layers_(std::move(layers)),
        final_norm_(std::move(final_norm)),
        lm_head_(std::move(lm_head)),
        rope_(config_.head_dim, config_.rope_theta) {
    attention_.heads = config_.num_heads;
    attention_.kv_heads = config_.num_kv_heads;
    attention_.head_dim = config_.head_dim;
    attention_.scale = 1.0f / std::sqrt(static_cast<float>(config_.head_dim));
  }

  std::unique_ptr<SequenceState> NewState() const override {
    return std::make_unique<LlamaState>(this, config_.num_layers);
  }

 private:
  void RunItem(const ForwardItem& item, LlamaState* state, ForwardOutput* out) override {
    const int64_t t_count = static_cast<int64_t>(item.tokens.size());
    const int64_t d = config_.hidden_size;
    const int64_t q_dim = config_.num_heads * config_.head_dim;
    const int64_t kv_dim = config_.num_kv_heads * config_.head_dim;
    const float eps = static_cast<float>(config_.norm_eps);
    const int64_t first = state->position();
    LlamaScratch& s = scratch_;
    s.hidden.resize(t_count * d);
    s.normed.resize(t_count * d);
    s.q.resize(t_count * q_dim);
    s.k.resize(t_count * kv_dim);
    s.v.resize(t_count * kv_dim);
    s.attn.resize(t_count * q_dim);
    s.mlp.resize(t_count * d);
    for (int64_t t = 0; t < t_count; ++t) {
      std::memcpy(&s.hidden[t * d], &embeddings_.data[item.tokens[t] * d], d * sizeof(float));
    }
    rope_.Tables(first, t_count, &s.cos, &s.sin);
    for (size_t l = 0; l < layers_.size(); ++l) {
      const LlamaLayer& layer = layers_[l];
      RmsNorm(s.hidden.data(), t_count, d, layer.attn_norm.data.data(), eps, s.normed.data());
      RowInvariantLinear(s.normed.data(), t_count, d, layer.q_proj, s.q.data());
      RowInvariantLinear(s.normed.data(), t_count, d, layer.k_proj, s.k.data());
      RowInvariantLinear(s.normed.data(), t_count, d, layer.v_proj, s.v.data());
      rope_.Apply(s.q.data(), t_count, config_.num_heads, q_dim, s.cos, s.sin);
      rope_.Apply(s.k.data(), t_count, config_.num_kv_heads, kv_dim, s.cos, s.sin);
      std::vector<float>& keys = state->keys(l);
      std::vector<float>& values = state->values(l);
      keys.insert(keys.end(), s.k.begin(), s.k.end());
      values.insert(values.end(), s.v.begin(), s.v.end());
      CausalAttention(s.q.data(), t_count, first, attention_, keys.data(), values.data(),
                      s.attn.data());
      RowInvariantLinear(s.attn.data(), t_count, q_dim, layer.o_proj, s.mlp.data());
      for (int64_t i = 0; i < t_count * d; ++i) s.hidden[i] += s.mlp[i];
      RmsNorm(s.hidden.data(), t_count, d, layer.mlp_norm.data.data(), eps, s.normed.data());
      RowInvariantGatedMlp(s.normed.data(), t_count, layer.mlp.gate, layer.mlp.up, layer.mlp.down,
                           s.mlp.data());
      for (int64_t i = 0; i < t_count * d; ++i) s.hidden[i] += s.mlp[i];
    }
    state->Advance(t_count);
    RmsNorm(s.hidden.data(), t_count, d, final_norm_.data.data(), eps, s.normed.data());
    ScoreHead(s.normed.data(), d, lm_head_, item, out);
  }

  HostTensor embeddings_;  // [V, D]
  std::vector<LlamaLayer> layers_;
  HostTensor final_norm_;  // [D]
  HostTensor lm_head_;     // [V, D]
  Rope rope_;
  AttentionShape attention_;
  LlamaScratch scratch_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildLlama(const Checkpoint& ckpt, const ModelConfig& c,
                                                  int64_t max_context) {
  if (c.family != ModelFamily::kLlama) {
    return absl::InvalidArgumentError("BuildLlama: the config is not a LLaMA/transformer model");
  }
  const int64_t d = c.hidden_size;
  const int64_t q_dim = c.num_heads * c.head_dim;
  const int64_t kv_dim = c.num_kv_heads * c.head_dim;
  const BlockTensorNames names = BlockTensorNamesFor(ckpt, c);
  CountingReader read(ckpt);

  HG_ASSIGN_OR_RETURN(HostTensor embeddings, read(names.embed, {c.vocab_size, d}));
  std::vector<LlamaLayer> layers(c.num_layers);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string m = names.MixerPrefix(l);
    LlamaLayer& layer = layers[l];
    HG_ASSIGN_OR_RETURN(layer.attn_norm, read(names.Norm1Weight(l), {d}));
    HG_ASSIGN_OR_RETURN(layer.q_proj, read(m + "q_proj.weight", {q_dim, d}));
    HG_ASSIGN_OR_RETURN(layer.k_proj, read(m + "k_proj.weight", {kv_dim, d}));
    HG_ASSIGN_OR_RETURN(layer.v_proj, read(m + "v_proj.weight", {kv_dim, d}));
    HG_ASSIGN_OR_RETURN(layer.o_proj, read(m + "o_proj.weight", {d, q_dim}));
    HG_ASSIGN_OR_RETURN(layer.mlp_norm, read(names.Norm2Weight(l), {d}));
    HG_ASSIGN_OR_RETURN(layer.mlp, ReadBlockMlp(ckpt, c, l));
    read.Count(3 * c.intermediate_size * d);
  }
  HG_ASSIGN_OR_RETURN(HostTensor final_norm, read(names.final_norm, {d}));
  HG_ASSIGN_OR_RETURN(HostTensor lm_head, read.ReadHead(names, c));

  ModelInfo info =
      CpuModelInfo(c, read.parameters(), max_context > 0 ? max_context : c.max_position_embeddings);
  // The KV cache, fp32 (its size is the family table's).
  info.state_bytes_per_token = StateValuesPerToken(c) * static_cast<int64_t>(sizeof(float));
  return std::unique_ptr<Model>(new LlamaModel(c, std::move(info), std::move(embeddings),
                                               std::move(layers), std::move(final_norm),
                                               std::move(lm_head)));
}

}  // namespace hgeval::cpu
