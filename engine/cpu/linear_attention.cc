#include "engine/cpu/linear_attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/ops.h"

namespace hgeval::cpu {

void GatedLinearAttention(const LinearAttentionShape& shape, const float* q, const float* k,
                          const float* v, const float* log_decay, int64_t t_len, float* state,
                          float* out) {
  const int64_t dk = shape.key_dim;
  const int64_t dv = shape.value_dim;
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t q_stride = shape.heads * dk;
  const int64_t k_stride = shape.kv_heads * dk;
  const int64_t v_stride = shape.kv_heads * dv;
  const int64_t o_stride = shape.heads * dv;
  // Heads are independent: each worker owns one kv head's state and its query heads'
  // output columns, so the split cannot change a result.
  auto run_head = [&](int64_t kv_head) {
    float* s = state + kv_head * dk * dv;
    std::vector<double> acc(static_cast<size_t>(group * dv));
    std::vector<float> decay(static_cast<size_t>(dk));
    for (int64_t t = 0; t < t_len; ++t) {
      const float* g_t = log_decay + t * k_stride + kv_head * dk;
      const float* k_t = k + t * k_stride + kv_head * dk;
      const float* v_t = v + t * v_stride + kv_head * dv;
      for (int64_t i = 0; i < dk; ++i) decay[i] = std::exp(g_t[i]);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t i = 0; i < dk; ++i) {
        float* row = s + i * dv;
        const float a = decay[i], b = k_t[i];
        for (int64_t j = 0; j < dv; ++j) row[j] = a * row[j] + b * v_t[j];
        for (int64_t m = 0; m < group; ++m) {
          const double qi = q[t * q_stride + (kv_head * group + m) * dk + i];
          double* o = acc.data() + m * dv;
          for (int64_t j = 0; j < dv; ++j) o[j] += qi * row[j];
        }
      }
      for (int64_t m = 0; m < group; ++m) {
        float* o_t = out + t * o_stride + (kv_head * group + m) * dv;
        const double* o = acc.data() + m * dv;
        for (int64_t j = 0; j < dv; ++j) o_t[j] = static_cast<float>(shape.scale * o[j]);
      }
    }
  };
  // Tiny problems are not worth waking the pool.
  if (shape.kv_heads == 1 || t_len * shape.state_size() < (int64_t{1} << 16)) {
    for (int64_t h = 0; h < shape.kv_heads; ++h) run_head(h);
  } else {
    ParallelFor(shape.kv_heads, run_head);
  }
}

}  // namespace hgeval::cpu
