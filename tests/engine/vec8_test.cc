// The eight-lane helpers of the CPU kernels: the vector exp is accurate, the transposed
// sums reduce in HorizontalSum8's order, and code built from them gives the same bits
// whether compiled for generic x86-64, AVX2 or AVX-512 (as the kernels' clones are).
#include "engine/cpu/vec8.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::cpu {
namespace {

TEST(Vec8, ExpIsWithinThreeUlpOfExp) {
  double worst = 0;
  float worst_x = 0;
  for (float x0 = -87.25f; x0 < 88.0f; x0 += 0.0137f) {
    V8 x;
    for (int l = 0; l < 8; ++l) x[l] = x0 + 0.0017f * l;
    const V8 e = Exp8(x);
    for (int l = 0; l < 8; ++l) {
      const double ref = std::exp(static_cast<double>(x[l]));
      const double err = std::fabs(e[l] - ref) / ref;
      if (err > worst) {
        worst = err;
        worst_x = x[l];
      }
    }
  }
  EXPECT_LT(worst, 3 * 0x1p-24) << "at x = " << worst_x;
}

TEST(Vec8, ExpUnderflowsToZeroAndIsOneAtZero) {
  const float inf = std::numeric_limits<float>::infinity();
  const V8 e = Exp8(V8{-inf, -1000.0f, -87.5f, 0.0f, -0.0f, 1.0f, -1.0f, 88.0f});
  EXPECT_EQ(e[0], 0.0f);
  EXPECT_EQ(e[1], 0.0f);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[3], 1.0f);
  EXPECT_EQ(e[4], 1.0f);
  EXPECT_NEAR(e[5], std::exp(1.0), 3e-7);
  EXPECT_NEAR(e[6], std::exp(-1.0), 1e-7);
  EXPECT_NEAR(e[7] / std::exp(88.0), 1.0, 3e-7);
}

TEST(Vec8, TransposedSumsReduceEachVectorInTheFixedOrder) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1e4f, 1e4f);
  for (int trial = 0; trial < 100; ++trial) {
    V8 acc[8];
    for (auto& v : acc) {
      for (int l = 0; l < 8; ++l) v[l] = u(rng);
    }
    const V8 sums = TransposedSums8(acc);
    for (int i = 0; i < 8; ++i) {
      const float got = sums[i], expected = HorizontalSum8(acc[i]);
      EXPECT_EQ(0, std::memcmp(&got, &expected, sizeof(float))) << "vector " << i;
    }
  }
}

// What the kernels do with the helpers: dot products reduced through the transpose, a
// scale, exp, and a running weighted sum.
__attribute__((always_inline)) inline void Mix(const float* a, const float* b, int n, float* out) {
  V8 sum = Splat8(0.0f);
  for (int j0 = 0; j0 + 64 <= n; j0 += 64) {
    V8 acc[8];
    for (int j = 0; j < 8; ++j) acc[j] = Load8(a + j0 + 8 * j) * Load8(b + j0 + 8 * j);
    const V8 e = Exp8(TransposedSums8(acc) * Splat8(0.37f) - Splat8(3.0f));
    sum += e * Load8(a + j0);
  }
  Store8(out, sum);
}

// GCC only, as the kernels' clones (vec8.h).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
void MixGeneric(const float* a, const float* b, int n, float* out) { Mix(a, b, n, out); }
__attribute__((target("avx2"))) void MixAvx2(const float* a, const float* b, int n, float* out) {
  Mix(a, b, n, out);
}
__attribute__((target("arch=x86-64-v4"))) void MixAvx512(const float* a, const float* b, int n,
                                                         float* out) {
  Mix(a, b, n, out);
}

TEST(Vec8, EveryInstructionSetGivesTheSameBits) {
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  const int n = 64 * 40;
  std::vector<float> a(n), b(n);
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  float generic[8], other[8];
  MixGeneric(a.data(), b.data(), n, generic);
  if (__builtin_cpu_supports("avx2")) {
    MixAvx2(a.data(), b.data(), n, other);
    EXPECT_EQ(0, std::memcmp(generic, other, sizeof(generic))) << "AVX2";
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    MixAvx512(a.data(), b.data(), n, other);
    EXPECT_EQ(0, std::memcmp(generic, other, sizeof(generic))) << "AVX-512";
  }
}
#endif  // GCC on x86-64

}  // namespace
}  // namespace hgeval::cpu
