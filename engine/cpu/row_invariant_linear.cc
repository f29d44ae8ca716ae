#include "engine/cpu/row_invariant_linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/cpu/ops.h"
#include "engine/cpu/vec8.h"

namespace hgeval::cpu {
namespace {

// Eight lanes; lane l accumulates the products at k ≡ l (mod 8), in k order (a last
// partial chunk is zero-padded), and the lanes are summed in HorizontalSum8's fixed tree.
// Multiplies and adds stay separate (vec8.h), so every instruction-set clone gives the
// same bits.

// MR rows of x against NR rows of W, each element reduced in the same fixed order.
template <int MR, int NR>
__attribute__((always_inline)) inline void Tile(const float* x, int64_t k, const float* w, float* y,
                                                int64_t ldy) {
  V8 acc[MR * NR];
  for (int a = 0; a < MR * NR; ++a) acc[a] = Splat8(0.0f);
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    V8 wv[NR];
    for (int n = 0; n < NR; ++n) wv[n] = Load8(w + n * k + i);
    for (int m = 0; m < MR; ++m) {
      const V8 xv = Load8(x + m * k + i);
      for (int n = 0; n < NR; ++n) acc[m * NR + n] += xv * wv[n];
    }
  }
  if (i < k) {
    for (int m = 0; m < MR; ++m) {
      const V8 xv = LoadPartial8(x + m * k + i, k - i);
      for (int n = 0; n < NR; ++n) acc[m * NR + n] += xv * LoadPartial8(w + n * k + i, k - i);
    }
  }
  if constexpr (MR * NR == 1) {
    y[0] = HorizontalSum8(acc[0]);
  } else {
    // Eight sums at a time through one transpose; missing ones padded with zeros.
    for (int a0 = 0; a0 < MR * NR; a0 += 8) {
      V8 group[8];
      for (int j = 0; j < 8; ++j) group[j] = a0 + j < MR * NR ? acc[a0 + j] : Splat8(0.0f);
      const V8 sums = TransposedSums8(group);
      for (int j = 0; j < 8 && a0 + j < MR * NR; ++j) {
        y[(a0 + j) / NR * ldy + (a0 + j) % NR] = sums[j];
      }
    }
  }
}

constexpr int kMr = 4;
constexpr int kNr = 2;
constexpr int kWide = 8;
// Rows of x per cache block: the weight tile is reused across them while they stay in L2.
constexpr int64_t kRowBlock = 64;

// Columns [n0, n1) of y for all rows: tiles of kMr x kNr, edges with smaller tiles (same
// per-element arithmetic).
HGEVAL_CPU_CLONES void Columns(const float* x, int64_t m, int64_t k, const float* w, int64_t n,
                               int64_t n0, int64_t n1, float* y) {
  for (int64_t r0 = 0; r0 < m; r0 += kRowBlock) {
    const int64_t r1 = std::min(m, r0 + kRowBlock);
    const int64_t full_end = r0 + (r1 - r0) / kMr * kMr;
    int64_t c = n0;
    for (; c + kNr <= n1; c += kNr) {
      const float* wc = w + c * k;
      for (int64_t r = r0; r < full_end; r += kMr) {
        Tile<kMr, kNr>(x + r * k, k, wc, y + r * n + c, n);
      }
    }
    for (; c < n1; ++c) {
      for (int64_t r = r0; r < full_end; r += kMr) {
        Tile<kMr, 1>(x + r * k, k, w + c * k, y + r * n + c, n);
      }
    }
    // Leftover rows (all of them in a decode step): one row against kWide weight rows at
    // a time, so enough independent sums are in flight to hide the add latency.
    for (int64_t r = full_end; r < r1; ++r) {
      int64_t cc = n0;
      for (; cc + kWide <= n1; cc += kWide) {
        Tile<1, kWide>(x + r * k, k, w + cc * k, y + r * n + cc, n);
      }
      for (; cc < n1; ++cc) Tile<1, 1>(x + r * k, k, w + cc * k, y + r * n + cc, n);
    }
  }
}

}  // namespace

void RowInvariantLinear(const float* x, int64_t m, int64_t k, const HostTensor& weight, float* y) {
  const int64_t n = weight.shape.empty() ? 0 : weight.shape[0];
  if (m == 0 || n == 0) return;
  // Split the output columns over threads in chunks of whole tiles; which thread computes
  // a column never changes its value.
  const int64_t work = m * n * k;
  const int64_t chunk_cols =
      work < (1 << 18) ? n : std::max<int64_t>(kNr * 8, (n / 64 + kNr - 1) / kNr * kNr);
  const int64_t chunks = (n + chunk_cols - 1) / chunk_cols;
  ParallelFor(chunks, [&](int64_t i) {
    const int64_t n0 = i * chunk_cols;
    Columns(x, m, k, weight.data.data(), n, n0, std::min(n, n0 + chunk_cols), y);
  });
}

void RowInvariantGatedMlp(const float* x, int64_t m, const HostTensor& gate, const HostTensor& up,
                          const HostTensor& down, float* out) {
  const int64_t inter = gate.shape[0];
  const int64_t d = gate.shape[1];
  std::vector<float> g(static_cast<size_t>(m * inter)), u(static_cast<size_t>(m * inter));
  RowInvariantLinear(x, m, d, gate, g.data());
  RowInvariantLinear(x, m, d, up, u.data());
  for (size_t i = 0; i < g.size(); ++i) g[i] = Silu(g[i]) * u[i];
  RowInvariantLinear(g.data(), m, inter, down, out);
}

}  // namespace hgeval::cpu
