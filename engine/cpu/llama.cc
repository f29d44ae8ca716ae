// LLaMA (Hugging Face LlamaForCausalLM; fla "transformer" checkpoints by renaming keys) on
// the CPU in fp32: RMSNorm, RoPE (rotate_half), GQA causal softmax attention over a KV cache
// held in the sequence state, SwiGLU MLP (the skeleton's, cpu_model.h). See specs/models.md §5.
#include <array>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu/attention.h"
#include "engine/cpu/cpu_model.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/rope.h"
#include "engine/cpu/row_invariant_linear.h"
#include "engine/model/family_table.h"
#include "engine/model/tensor_names.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// What the layers' attention mixers share: RoPE and its tables for the item at hand (the
// same for every layer), and scratch (layers run one after another).
struct LlamaShared {
  explicit LlamaShared(const ModelConfig& c) : rope(c.head_dim, c.rope_theta) {
    attention.heads = c.num_heads;
    attention.kv_heads = c.num_kv_heads;
    attention.head_dim = c.head_dim;
    attention.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  }
  Rope rope;
  AttentionShape attention;
  int64_t tables_first = -1, tables_count = -1;  // the positions cos/sin hold
  std::vector<float> cos, sin, q, k, v, attn;
};

// One layer's self-attention: q/k/v projections, RoPE, the KV cache (the layer's
// MixerState keys/values, [position, kv_heads * head_dim]), GQA causal attention, o_proj.
class LlamaAttention final : public TokenMixer {
 public:
  LlamaAttention(std::shared_ptr<LlamaShared> shared, HostTensor q_proj, HostTensor k_proj,
                 HostTensor v_proj, HostTensor o_proj)
      : shared_(std::move(shared)),
        q_proj_(std::move(q_proj)),
        k_proj_(std::move(k_proj)),
        v_proj_(std::move(v_proj)),
        o_proj_(std::move(o_proj)) {}

  MixerState NewState() const override { return MixerState(); }

  int64_t num_parameters() const override {
    return q_proj_.numel() + k_proj_.numel() + v_proj_.numel() + o_proj_.numel();
  }

  void Forward(const float* x, int64_t t_count, int64_t first, MixerState* state,
               float* out) override {
    LlamaShared& s = *shared_;
    const AttentionShape& shape = s.attention;
    const int64_t d = o_proj_.shape[0];
    const int64_t q_dim = shape.heads * shape.head_dim;
    const int64_t kv_dim = shape.kv_heads * shape.head_dim;
    s.q.resize(t_count * q_dim);
    s.k.resize(t_count * kv_dim);
    s.v.resize(t_count * kv_dim);
    s.attn.resize(t_count * q_dim);
    if (s.tables_first != first || s.tables_count != t_count) {
      s.rope.Tables(first, t_count, &s.cos, &s.sin);
      s.tables_first = first;
      s.tables_count = t_count;
    }
    RowInvariantLinear(x, t_count, d, q_proj_, s.q.data());
    RowInvariantLinear(x, t_count, d, k_proj_, s.k.data());
    RowInvariantLinear(x, t_count, d, v_proj_, s.v.data());
    s.rope.Apply(s.q.data(), t_count, shape.heads, q_dim, s.cos, s.sin);
    s.rope.Apply(s.k.data(), t_count, shape.kv_heads, kv_dim, s.cos, s.sin);
    state->keys.insert(state->keys.end(), s.k.begin(), s.k.end());
    state->values.insert(state->values.end(), s.v.begin(), s.v.end());
    CausalAttention(s.q.data(), t_count, first, shape, state->keys.data(), state->values.data(),
                    s.attn.data());
    RowInvariantLinear(s.attn.data(), t_count, q_dim, o_proj_, out);
  }

 private:
  std::shared_ptr<LlamaShared> shared_;
  HostTensor q_proj_;  // [H*hd, D]
  HostTensor k_proj_;  // [Hkv*hd, D]
  HostTensor v_proj_;  // [Hkv*hd, D]
  HostTensor o_proj_;  // [D, H*hd]
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
  std::vector<std::array<HostTensor, 4>> weights(c.num_layers);  // q, k, v, o
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string m = names.MixerPrefix(l);
    HG_ASSIGN_OR_RETURN(weights[l][0], ckpt.ReadFloat(m + "q_proj.weight", {q_dim, d}));
    HG_ASSIGN_OR_RETURN(weights[l][1], ckpt.ReadFloat(m + "k_proj.weight", {kv_dim, d}));
    HG_ASSIGN_OR_RETURN(weights[l][2], ckpt.ReadFloat(m + "v_proj.weight", {kv_dim, d}));
    HG_ASSIGN_OR_RETURN(weights[l][3], ckpt.ReadFloat(m + "o_proj.weight", {d, q_dim}));
  }
  // After the weights: their shapes have checked the config's head sizes.
  auto shared = std::make_shared<LlamaShared>(c);
  CpuModelParts parts;
  for (auto& [q_proj, k_proj, v_proj, o_proj] : weights) {
    parts.mixers.push_back(std::make_unique<LlamaAttention>(
        shared, std::move(q_proj), std::move(k_proj), std::move(v_proj), std::move(o_proj)));
  }
  parts.layout.max_context = max_context > 0 ? max_context : c.max_position_embeddings;
  // The KV cache, fp32 (its size is the family table's).
  parts.layout.state_bytes_per_token = StateValuesPerToken(c) * static_cast<int64_t>(sizeof(float));
  return MakeCpuModel(ckpt, c, std::move(parts));
}

}  // namespace hgeval::cpu
