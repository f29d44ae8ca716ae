// The gated linear-attention recurrence shared by HGRN2 and GLA (specs/models.md §2.4 step 5,
// §4): per head, S_t = diag(exp g_t) S_{t-1} + k_t ⊗ v_t and o_t = scale · S_tᵀ q_t.
// Evaluated token by token with an fp32 state (as fla keeps it) and the output contraction
// accumulated in double; the state is [kv_heads][key_dim][value_dim] so the inner loops run
// over contiguous values.
#ifndef HGEVAL_ENGINE_CPU_LINEAR_ATTENTION_H_
#define HGEVAL_ENGINE_CPU_LINEAR_ATTENTION_H_

#include <cstdint>

namespace hgeval::cpu {

struct LinearAttentionShape {
  int64_t heads = 0;      // query heads H
  int64_t kv_heads = 0;   // H % kv_heads == 0; kv head j serves query heads [jG, (j+1)G)
  int64_t key_dim = 0;    // dk per head
  int64_t value_dim = 0;  // dv per head
  double scale = 1.0;     // multiplies the output (fla's default is dk^-0.5)

  // Floats of recurrent state per sequence. Heads that share a kv head share k, v and the
  // decay, so their states are equal: one state per kv head suffices.
  int64_t state_size() const { return kv_heads * key_dim * value_dim; }
};

// q: [T, H*dk]; k and log_decay: [T, kv_heads*dk]; v: [T, kv_heads*dv]; out: [T, H*dv]
// (fp32, row-major, channel axis split as (head, dim) with the head major).
// `state` (state_size() floats) holds S_{t0-1} on entry and S_{t0+T-1} on return.
void GatedLinearAttention(const LinearAttentionShape& shape, const float* q, const float* k,
                          const float* v, const float* log_decay, int64_t t_len, float* state,
                          float* out);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_LINEAR_ATTENTION_H_
