// RowInvariantLinear: every output row is bitwise the same whatever the number of rows in
// the call and wherever the row sits in it, and the products are accurate.
#include "engine/cpu/row_invariant_linear.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::cpu {
namespace {

HostTensor RandomTensor(std::vector<int64_t> shape, std::mt19937* rng) {
  std::normal_distribution<float> normal;
  HostTensor t;
  t.shape = shape;
  t.data.resize(static_cast<size_t>(shape[0] * shape[1]));
  for (float& v : t.data) v = normal(*rng);
  return t;
}

TEST(RowInvariantLinear, RowsDoNotDependOnTheCallShape) {
  std::mt19937 rng(3);
  for (auto [k, n] :
       {std::pair<int64_t, int64_t>{5, 3}, {64, 24}, {130, 77}, {352, 512}, {1000, 129}}) {
    const int64_t rows = 70;
    HostTensor x = RandomTensor({rows, k}, &rng);
    HostTensor w = RandomTensor({n, k}, &rng);
    std::vector<float> all(static_cast<size_t>(rows * n));
    RowInvariantLinear(x.data.data(), rows, k, w, all.data());
    for (int64_t m : {1, 2, 3, 4, 5, 7, 8, 13, 64, 65}) {
      for (int64_t start : {int64_t{0}, int64_t{1}, rows - m}) {
        std::vector<float> part(static_cast<size_t>(m * n));
        RowInvariantLinear(x.data.data() + start * k, m, k, w, part.data());
        EXPECT_EQ(0, std::memcmp(part.data(), all.data() + start * n, part.size() * sizeof(float)))
            << "k=" << k << " n=" << n << " m=" << m << " start=" << start;
      }
    }
    // Accuracy against a double-precision product.
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double ref = 0, scale = 0;
        for (int64_t i = 0; i < k; ++i) {
          ref += static_cast<double>(x.data[r * k + i]) * w.data[c * k + i];
          scale += std::fabs(static_cast<double>(x.data[r * k + i]) * w.data[c * k + i]);
        }
        worst = std::max(worst, std::fabs(all[r * n + c] - ref) / scale);
      }
    }
    EXPECT_LT(worst, 1e-6) << "k=" << k << " n=" << n;
  }
}

TEST(RowInvariantLinear, GatedMlpIsSwiGlu) {
  std::mt19937 rng(4);
  const int64_t d = 9, inter = 17, m = 3;
  HostTensor x = RandomTensor({m, d}, &rng), gate = RandomTensor({inter, d}, &rng),
             up = RandomTensor({inter, d}, &rng), down = RandomTensor({d, inter}, &rng);
  std::vector<float> out(m * d);
  RowInvariantGatedMlp(x.data.data(), m, gate, up, down, out.data());
  for (int64_t r = 0; r < m; ++r) {
    std::vector<double> h(inter);
    for (int64_t j = 0; j < inter; ++j) {
      double g = 0, u = 0;
      for (int64_t i = 0; i < d; ++i) {
        g += static_cast<double>(x.data[r * d + i]) * gate.data[j * d + i];
        u += static_cast<double>(x.data[r * d + i]) * up.data[j * d + i];
      }
      h[j] = g / (1 + std::exp(-g)) * u;
    }
    for (int64_t c = 0; c < d; ++c) {
      double ref = 0;
      for (int64_t j = 0; j < inter; ++j) ref += h[j] * down.data[c * inter + j];
      EXPECT_NEAR(out[r * d + c], ref, 1e-4 * (1 + std::fabs(ref)));
    }
  }
}

}  // namespace
}  // namespace hgeval::cpu
