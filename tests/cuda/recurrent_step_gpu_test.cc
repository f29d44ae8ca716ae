// The fused HGRN2 decode step (kernels_recurrent_step.cu: gates, state update, output and
// g_norm in one kernel) against the same step in double, and against the unfused pair
// (Hgrn2DecodeStep, then RmsNormGated) it replaces: the states bitwise equal, padding rows
// untouched, at head counts that take a portable cluster, a Hopper-only one and none.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <vector>

#include "engine/cuda/kernels.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"

namespace hgeval::cuda {
namespace {

struct StepCase {
  int heads, head_dim;
  bool bf16;
};

void PrintTo(const StepCase& c, std::ostream* os) {
  *os << "H" << c.heads << "_K" << c.head_dim << (c.bf16 ? "_bf16" : "_fp32");
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

float Bf16ToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

class Hgrn2StepNormTest : public ::testing::TestWithParam<StepCase> {};

TEST_P(Hgrn2StepNormTest, MatchesDoubleAndTheUnfusedStep) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU";
  const StepCase c = GetParam();
  const int H = c.heads, K = c.head_dim, D = H * K;
  const int rows = 3, padding_row = 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(K)), eps = 1e-5f;
  std::mt19937 rng(7 + H * 31 + K);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::uniform_real_distribution<float> u01(0.0f, 1.0f);
  std::vector<float> qfi(static_cast<size_t>(rows) * 3 * D), lb(D), w(D);
  for (float& x : qfi) x = n01(rng);
  for (float& x : lb) x = 0.9f * u01(rng);
  for (float& x : w) x = 1.0f + 0.1f * n01(rng);
  const size_t state = static_cast<size_t>(H) * K * K;
  std::vector<float> s0(rows * state);
  for (float& x : s0) x = n01(rng);

  // The fused kernel and the unfused pair, each on its own copy of the states.
  Dev<float> dqfi(qfi), dlb(lb), dw(w), fused_s(s0), pair_s(s0);
  Dev<float> o_scratch(static_cast<size_t>(rows) * D), pair_o(static_cast<size_t>(rows) * D);
  const Act act = c.bf16 ? Act::kBF16 : Act::kF32;
  const size_t out_bytes = static_cast<size_t>(rows) * D * (c.bf16 ? 2 : 4);
  Dev<uint8_t> fused_out(out_bytes), pair_out(out_bytes);
  auto ptrs = [&](Dev<float>& s) {
    std::vector<float*> p(rows);
    for (int r = 0; r < rows; ++r) p[r] = r == padding_row ? nullptr : s.get() + r * state;
    return p;
  };
  Dev<float*> fused_ptrs(ptrs(fused_s)), pair_ptrs(ptrs(pair_s));
  ASSERT_EQ(
      Hgrn2DecodeStepNorm(dqfi.get(), dlb.get(), rows, H, K, scale, fused_ptrs.get(), 0, dw.get(),
                          eps, /*fuse=*/true, o_scratch.get(), fused_out.get(), act, nullptr),
      cudaSuccess);
  ASSERT_EQ(Hgrn2DecodeStep(dqfi.get(), dlb.get(), rows, H, K, scale, pair_ptrs.get(), 0,
                            pair_o.get(), nullptr),
            cudaSuccess);
  ASSERT_EQ(RmsNormGated(pair_o.get(), D, nullptr, 0, dw.get(), eps, rows, D, D, pair_out.get(),
                         act, D, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const std::vector<float> fs = fused_s.Get(), ps = pair_s.Get();
  EXPECT_EQ(std::memcmp(fs.data(), ps.data(), fs.size() * sizeof(float)), 0)
      << "states differ from the unfused step";
  const std::vector<uint8_t> fo = fused_out.Get(), po = pair_out.Get();
  auto at = [&](const std::vector<uint8_t>& bytes, size_t i) {
    if (c.bf16) {
      uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      return Bf16ToFloat(b);
    }
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  };

  // The step and g_norm in double from the same inputs.
  double num = 0, den = 0, worst_vs_pair = 0;
  for (int r = 0; r < rows; ++r) {
    if (r == padding_row) {
      for (int i = 0; i < D; ++i) EXPECT_TRUE(std::isnan(at(fo, r * D + i))) << "padding written";
      EXPECT_EQ(std::memcmp(fs.data() + r * state, s0.data() + r * state, state * sizeof(float)), 0)
          << "padding state written";
      continue;
    }
    const float* row = qfi.data() + static_cast<size_t>(r) * 3 * D;
    std::vector<double> o(D);
    for (int h = 0; h < H; ++h) {
      std::vector<double> S(s0.begin() + r * state + h * K * K,
                            s0.begin() + r * state + (h + 1) * K * K);
      for (int a = 0; a < K; ++a) {
        const int ch = h * K + a;
        const double f = row[D + ch];
        const double k = (1.0 - lb[ch]) * Sigmoid(-f);
        const double d = lb[ch] + (1.0 - lb[ch]) * Sigmoid(f);
        for (int b = 0; b < K; ++b) S[a * K + b] = d * S[a * K + b] + k * row[2 * D + h * K + b];
      }
      for (int b = 0; b < K; ++b) {
        double acc = 0;
        for (int a = 0; a < K; ++a) {
          const double qv = row[h * K + a];
          acc += S[a * K + b] * (qv / (1.0 + std::exp(-qv)));
        }
        o[h * K + b] = scale * acc;
      }
      for (int i = 0; i < K * K; ++i) {
        const double got = fs[r * state + h * K * K + i];
        num += (got - S[i]) * (got - S[i]);
        den += S[i] * S[i];
      }
    }
    double ss = 0;
    for (double x : o) ss += x * x;
    const double rstd = 1.0 / std::sqrt(ss / D + eps);
    double onum = 0, oden = 0;
    for (int i = 0; i < D; ++i) {
      const double want = o[i] * rstd * w[i];
      const double got = at(fo, r * D + i);
      onum += (got - want) * (got - want);
      oden += want * want;
      const double pair = at(po, r * D + i);
      worst_vs_pair =
          std::max(worst_vs_pair, std::fabs(got - pair) / std::max(1e-3, std::fabs(pair)));
    }
    EXPECT_LT(std::sqrt(onum / oden), c.bf16 ? 4e-3 : 1e-5) << "output of row " << r;
  }
  EXPECT_LT(std::sqrt(num / den), 1e-5) << "states";
  // The fused norm sums the squares in another order: one rounding of the output's dtype
  // apart from the unfused pair at most.
  EXPECT_LE(worst_vs_pair, c.bf16 ? 1.0 / 128 : 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, Hgrn2StepNormTest,
                         ::testing::Values(StepCase{16, 128, true}, StepCase{16, 128, false},
                                           StepCase{4, 64, true}, StepCase{8, 32, false},
                                           StepCase{3, 256, false}, StepCase{20, 16, true},
                                           StepCase{20, 16, false}));

TEST(Hgrn2StepNormTest, FusesUpToSixteenHeads) {
  EXPECT_TRUE(Hgrn2DecodeStepNormFused(1));
  EXPECT_TRUE(Hgrn2DecodeStepNormFused(16));
  EXPECT_FALSE(Hgrn2DecodeStepNormFused(17));
}

}  // namespace
}  // namespace hgeval::cuda
