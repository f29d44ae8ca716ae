#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/ops.h"

namespace hgeval::cpu {
namespace {

// Eight independent partial sums (vectorisable), combined in a fixed order.
float Dot(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  for (; i < n; ++i) acc[i % 8] += a[i] * b[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

// One query row of one head.
void AttendOne(const float* q, int64_t keys, const AttentionShape& s, int64_t kv_head,
               const float* k_cache, const float* v_cache, float* scores, float* out) {
  const int64_t hd = s.head_dim;
  const int64_t kv_stride = s.kv_heads * hd;
  const float* k = k_cache + kv_head * hd;
  const float* v = v_cache + kv_head * hd;
  float max_score = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    scores[j] = Dot(q, k + j * kv_stride, hd) * s.scale;
    max_score = std::max(max_score, scores[j]);
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < keys; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  const float inv_sum = 1.0f / sum;
  std::fill(out, out + hd, 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float p = scores[j] * inv_sum;
    const float* vj = v + j * kv_stride;
    for (int64_t d = 0; d < hd; ++d) out[d] += p * vj[d];
  }
}

}  // namespace

void CausalAttention(const float* q, int64_t rows, int64_t first_pos, const AttentionShape& shape,
                     const float* k_cache, const float* v_cache, float* out) {
  const int64_t hd = shape.head_dim;
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t q_stride = shape.heads * hd;
  const int64_t tasks = rows * shape.heads;
  // Group (row, head) pairs so that each task has enough work to amortise scheduling.
  const int64_t per_task =
      std::max<int64_t>(1, 4096 / std::max<int64_t>(1, (first_pos + rows) * hd));
  const int64_t chunks = (tasks + per_task - 1) / per_task;
  ParallelFor(chunks, [&](int64_t chunk) {
    std::vector<float> scores(first_pos + rows);
    const int64_t end = std::min(tasks, (chunk + 1) * per_task);
    for (int64_t task = chunk * per_task; task < end; ++task) {
      const int64_t r = task / shape.heads;
      const int64_t h = task % shape.heads;
      AttendOne(q + r * q_stride + h * hd, first_pos + r + 1, shape, h / group, k_cache, v_cache,
                scores.data(), out + r * q_stride + h * hd);
    }
  });
}

}  // namespace hgeval::cpu
