#include "engine/cpu/row_invariant_linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/cpu/ops.h"

namespace hgeval::cpu {
namespace {

// Eight lanes; lane l accumulates the products at k ≡ l (mod 8), in k order. GCC lowers it
// to AVX or to pairs of SSE registers; either way each lane does the same IEEE operations
// (no fused multiply-add: the build does not contract), so results do not depend on the
// instruction set either.
typedef float V8 __attribute__((vector_size(32)));

__attribute__((always_inline)) inline void Load(const float* p, V8* v) {
  std::memcpy(v, p, sizeof(V8));
}

// MR rows of x against NR rows of W, each element reduced in the same fixed order.
template <int MR, int NR>
__attribute__((always_inline)) inline void Tile(const float* x, int64_t k, const float* w, float* y,
                                                int64_t ldy) {
  V8 acc[MR][NR];
  for (int m = 0; m < MR; ++m) {
    for (int n = 0; n < NR; ++n) acc[m][n] = V8{0, 0, 0, 0, 0, 0, 0, 0};
  }
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    V8 wv[NR];
    for (int n = 0; n < NR; ++n) Load(w + n * k + i, &wv[n]);
    for (int m = 0; m < MR; ++m) {
      V8 xv;
      Load(x + m * k + i, &xv);
      for (int n = 0; n < NR; ++n) acc[m][n] += xv * wv[n];
    }
  }
  for (int m = 0; m < MR; ++m) {
    for (int n = 0; n < NR; ++n) {
      float l[8];
      for (int j = 0; j < 8; ++j) l[j] = acc[m][n][j];
      for (int64_t j = i; j < k; ++j) l[j - i] += x[m * k + j] * w[n * k + j];
      y[m * ldy + n] = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
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
__attribute__((target_clones("avx2", "default"))) void Columns(const float* x, int64_t m, int64_t k,
                                                               const float* w, int64_t n,
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
      for (; cc + kWide <= n1; cc += kWide)
        Tile<1, kWide>(x + r * k, k, w + cc * k, y + r * n + cc, n);
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
