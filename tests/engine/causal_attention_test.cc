// CausalAttention: a position's output is bitwise the same whether it is computed in a
// prefill of many rows, in chunks, or one decode step at a time, and it matches a
// double-precision softmax, for head sizes that fill, and do not fill, eight lanes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/cpu/attention.h"
#include "gtest/gtest.h"

namespace hgeval::cpu {
namespace {

struct Case {
  AttentionShape shape;
  int64_t positions;
  float q_scale;  // large values make the softmax peaked (exp underflows for most keys)
};

std::vector<Case> Cases() {
  auto shape = [](int64_t heads, int64_t kv_heads, int64_t head_dim) {
    AttentionShape s;
    s.heads = heads;
    s.kv_heads = kv_heads;
    s.head_dim = head_dim;
    s.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    return s;
  };
  return {{shape(8, 4, 8), 45, 1.0f},
          {shape(4, 4, 12), 33, 1.0f},
          {shape(4, 2, 64), 20, 1.0f},
          {shape(2, 1, 5), 17, 1.0f},
          {shape(8, 4, 8), 40, 40.0f}};
}

std::vector<float> Random(int64_t n, float scale, std::mt19937* rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = scale * normal(*rng);
  return v;
}

TEST(CausalAttention, PositionsDoNotDependOnTheCallShape) {
  std::mt19937 rng(5);
  for (const Case& c : Cases()) {
    const int64_t n = c.positions;
    const int64_t q_width = c.shape.heads * c.shape.head_dim;
    const int64_t kv_width = c.shape.kv_heads * c.shape.head_dim;
    const std::vector<float> q = Random(n * q_width, c.q_scale, &rng);
    const std::vector<float> k = Random(n * kv_width, 1.0f, &rng);
    const std::vector<float> v = Random(n * kv_width, 1.0f, &rng);
    std::vector<float> prefill(static_cast<size_t>(n * q_width));
    CausalAttention(q.data(), n, 0, c.shape, k.data(), v.data(), prefill.data());
    for (int64_t chunk : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{9}}) {
      std::vector<float> out(prefill.size());
      for (int64_t first = 0; first < n; first += chunk) {
        const int64_t rows = std::min(chunk, n - first);
        // The cache as a caller would hold it: only the positions consumed so far.
        const std::vector<float> k_prefix(k.begin(), k.begin() + (first + rows) * kv_width);
        const std::vector<float> v_prefix(v.begin(), v.begin() + (first + rows) * kv_width);
        CausalAttention(q.data() + first * q_width, rows, first, c.shape, k_prefix.data(),
                        v_prefix.data(), out.data() + first * q_width);
      }
      EXPECT_EQ(0, std::memcmp(out.data(), prefill.data(), out.size() * sizeof(float)))
          << "head_dim " << c.shape.head_dim << ", chunks of " << chunk;
    }
  }
}

TEST(CausalAttention, MatchesDoublePrecisionSoftmax) {
  std::mt19937 rng(6);
  for (const Case& c : Cases()) {
    const int64_t n = c.positions;
    const int64_t hd = c.shape.head_dim;
    const int64_t q_width = c.shape.heads * hd;
    const int64_t kv_width = c.shape.kv_heads * hd;
    const std::vector<float> q = Random(n * q_width, c.q_scale, &rng);
    const std::vector<float> k = Random(n * kv_width, 1.0f, &rng);
    const std::vector<float> v = Random(n * kv_width, 1.0f, &rng);
    std::vector<float> out(static_cast<size_t>(n * q_width));
    CausalAttention(q.data(), n, 0, c.shape, k.data(), v.data(), out.data());
    const int64_t group = c.shape.heads / c.shape.kv_heads;
    double worst = 0;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t h = 0; h < c.shape.heads; ++h) {
        const float* qr = q.data() + r * q_width + h * hd;
        const int64_t kv = (h / group) * hd;
        std::vector<double> p(static_cast<size_t>(r + 1));
        double max_score = -INFINITY;
        for (int64_t j = 0; j <= r; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d)
            dot += static_cast<double>(qr[d]) * k[j * kv_width + kv + d];
          p[j] = dot * c.shape.scale;
          max_score = std::max(max_score, p[j]);
        }
        double sum = 0;
        for (double& x : p) sum += (x = std::exp(x - max_score));
        for (int64_t d = 0; d < hd; ++d) {
          double ref = 0;
          for (int64_t j = 0; j <= r; ++j) ref += p[j] / sum * v[j * kv_width + kv + d];
          worst = std::max(worst, std::fabs(out[r * q_width + h * hd + d] - ref));
        }
      }
    }
    // Softmax weights sum to one over N(0, 1) values: errors are absolute, a few ulp of
    // the largest terms, plus the dot products' rounding amplified by q_scale.
    EXPECT_LT(worst, c.q_scale * 2e-5) << "head_dim " << hd;
  }
}

}  // namespace
}  // namespace hgeval::cpu
