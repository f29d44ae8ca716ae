// Causal softmax attention over a KV cache, with grouped-query heads (GQA).
#ifndef HGEVAL_ENGINE_CPU_ATTENTION_H_
#define HGEVAL_ENGINE_CPU_ATTENTION_H_

#include <cstdint>

namespace hgeval::cpu {

struct AttentionShape {
  int64_t heads = 0;     // query heads H
  int64_t kv_heads = 0;  // key/value heads; query head h reads kv head h / (H / kv_heads)
  int64_t head_dim = 0;
  float scale = 1.0f;  // softmax scale (head_dim^-0.5)
};

// out[r] = softmax(scale * q[r]·K[0..first_pos+r]ᵀ) · V[0..first_pos+r] per head, for `rows`
// query rows at positions first_pos + r. q and out are [rows, H*head_dim]; k_cache and
// v_cache hold [first_pos + rows, kv_heads*head_dim] (the new rows already appended).
// Each (row, head) is reduced in a fixed order independent of `rows` and of threading, so
// a position's output is the same whether it is computed in a long prefill or one step.
void CausalAttention(const float* q, int64_t rows, int64_t first_pos, const AttentionShape& shape,
                     const float* k_cache, const float* v_cache, float* out);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_ATTENTION_H_
