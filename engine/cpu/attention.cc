#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/cpu/ops.h"
#include "engine/cpu/vec8.h"

namespace hgeval::cpu {
namespace {

// q·k with eight partial sums (lane l takes the elements at i ≡ l mod 8, a last partial
// chunk zero-padded), combined in HorizontalSum8's fixed order.
__attribute__((always_inline)) inline V8 DotLanes(const float* a, const float* b, int64_t n) {
  V8 acc = Splat8(0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc += Load8(a + i) * Load8(b + i);
  if (i < n) acc += LoadPartial8(a + i, n - i) * LoadPartial8(b + i, n - i);
  return acc;
}

// One query row of one head. `scores` has room for `keys` rounded up to a multiple of 8.
// Every step depends only on the query, the keys and values, and `keys`, so a position
// gives the same bits in a prefill and in a decode step.
HGEVAL_CPU_CLONES void AttendOne(const float* q, int64_t keys, const AttentionShape& s,
                                 int64_t kv_head, const float* k_cache, const float* v_cache,
                                 float* scores, float* out) {
  const int64_t hd = s.head_dim;
  const int64_t kv_stride = s.kv_heads * hd;
  const float* k = k_cache + kv_head * hd;
  const float* v = v_cache + kv_head * hd;
  const int64_t padded = (keys + 7) / 8 * 8;
  // Scores, eight keys at a time (one transpose sums all eight); the pad is -inf.
  V8 max8 = Splat8(-INFINITY);
  for (int64_t j0 = 0; j0 < padded; j0 += 8) {
    V8 acc[8];
    for (int64_t j = 0; j < 8; ++j) {
      acc[j] = j0 + j < keys ? DotLanes(q, k + (j0 + j) * kv_stride, hd) : Splat8(0.0f);
    }
    V8 block = TransposedSums8(acc) * Splat8(s.scale);
    for (int64_t j = keys - j0; j < 8; ++j) block[j] = -INFINITY;
    Store8(scores + j0, block);
    max8 = Max8(max8, block);
  }
  const V8 max_score = Splat8(HorizontalMax8(max8));
  // exp(score - max) summed over lanes j ≡ l (mod 8), then across lanes.
  V8 sum8 = Splat8(0.0f);
  for (int64_t j0 = 0; j0 < padded; j0 += 8) {
    const V8 e = Exp8(Load8(scores + j0) - max_score);
    Store8(scores + j0, e);
    sum8 += e;
  }
  const float inv_sum = 1.0f / HorizontalSum8(sum8);
  // out = Σ_j p_j v_j with two partial sums (even and odd keys), added at the end.
  int64_t d0 = 0;
  for (; d0 + 8 <= hd; d0 += 8) {
    V8 even = Splat8(0.0f), odd = Splat8(0.0f);
    int64_t j = 0;
    for (; j + 2 <= keys; j += 2) {
      even += Splat8(scores[j] * inv_sum) * Load8(v + j * kv_stride + d0);
      odd += Splat8(scores[j + 1] * inv_sum) * Load8(v + (j + 1) * kv_stride + d0);
    }
    if (j < keys) even += Splat8(scores[j] * inv_sum) * Load8(v + j * kv_stride + d0);
    Store8(out + d0, even + odd);
  }
  for (int64_t d = d0; d < hd; ++d) {
    float even = 0.0f, odd = 0.0f;
    int64_t j = 0;
    for (; j + 2 <= keys; j += 2) {
      even += scores[j] * inv_sum * v[j * kv_stride + d];
      odd += scores[j + 1] * inv_sum * v[(j + 1) * kv_stride + d];
    }
    if (j < keys) even += scores[j] * inv_sum * v[j * kv_stride + d];
    out[d] = even + odd;
  }
}

}  // namespace

void CausalAttention(const float* q, int64_t rows, int64_t first_pos, const AttentionShape& shape,
                     const float* k_cache, const float* v_cache, float* out) {
  const int64_t hd = shape.head_dim;
  const int64_t group = shape.heads / shape.kv_heads;
  const int64_t q_stride = shape.heads * hd;
  const int64_t tasks = rows * shape.heads;
  // Group (row, head) pairs so that each task has enough work (~2^17 key elements, tens
  // of microseconds) to pay for waking a worker; a small model's decode step stays on
  // the calling thread.
  constexpr int64_t kMinTaskElements = int64_t{1} << 17;
  const int64_t per_task =
      std::max<int64_t>(1, kMinTaskElements / std::max<int64_t>(1, (first_pos + rows) * hd));
  const int64_t chunks = (tasks + per_task - 1) / per_task;
  ParallelFor(chunks, [&](int64_t chunk) {
    std::vector<float> scores((first_pos + rows + 7) / 8 * 8);
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
