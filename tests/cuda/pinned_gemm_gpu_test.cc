// PinnedGemm's beta = 1 (C += A · W^T in the epilogue, engine/cuda/gemm.h), which packs use
// to add the MLP's down projection and the mixers' o_proj to the residual: bitwise the
// beta = 0 product followed by the fp32 add AddRmsNorm did, at several M, whether the
// site was pinned by a beta = 0 call first or by the beta = 1 call itself, bf16 and fp32.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <vector>

#include "engine/cuda/gemm.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"

namespace hgeval::cuda {
namespace {

struct BetaCase {
  int64_t n, k;
  Act act;
};

void PrintTo(const BetaCase& c, std::ostream* os) {
  *os << c.n << "x" << c.k << (c.act == Act::kBF16 ? "_bf16" : "_fp32");
}

class PinnedGemmBetaTest : public ::testing::TestWithParam<BetaCase> {};

TEST_P(PinnedGemmBetaTest, BetaOneEqualsProductThenFloatAdd) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const BetaCase c = GetParam();
  const int64_t max_m = 300;
  std::mt19937 rng(static_cast<uint32_t>(c.n + c.k));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> a(max_m * c.k), w(c.n * c.k), h(max_m * c.n);
  for (auto& x : a) x = nd(rng);
  for (auto& x : w) x = nd(rng) * 0.05f;
  for (auto& x : h) x = nd(rng) * 4.0f;
  Dev<float> da32(a), dw32(w);
  Dev<uint16_t> da16(RoundedBf16Bits(a)), dw16(RoundedBf16Bits(w));
  const bool bf16 = c.act == Act::kBF16;
  const MatRef am{bf16 ? static_cast<const void*>(da16.get()) : da32.get(), c.act, c.k};
  const MatRef wm{bf16 ? static_cast<const void*>(dw16.get()) : dw32.get(), c.act, c.k};
  for (const bool pinned_by_beta_zero : {true, false}) {
    auto gemm = PinnedGemm::Create(16384);
    ASSERT_TRUE(gemm.ok()) << gemm.status();
    for (const int64_t m : {int64_t{1}, int64_t{37}, max_m}) {
      SCOPED_TRACE(::testing::Message()
                   << "M=" << m << (pinned_by_beta_zero ? "" : ", beta 1 first"));
      const size_t nc = static_cast<size_t>(m * c.n);
      const std::vector<float> h_m(h.begin(), h.begin() + nc);
      Dev<float> dsum(h_m), dprod(nc);
      if (pinned_by_beta_zero) {
        ASSERT_TRUE((*gemm)->Run(nullptr, m, c.n, c.k, am, wm, dprod.get(), Act::kF32, c.n).ok());
        ASSERT_TRUE(
            (*gemm)->Run(nullptr, m, c.n, c.k, am, wm, dsum.get(), Act::kF32, c.n, 1.0f).ok());
      } else {
        ASSERT_TRUE(
            (*gemm)->Run(nullptr, m, c.n, c.k, am, wm, dsum.get(), Act::kF32, c.n, 1.0f).ok());
        ASSERT_TRUE((*gemm)->Run(nullptr, m, c.n, c.k, am, wm, dprod.get(), Act::kF32, c.n).ok());
      }
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> prod = dprod.Get(), sum = dsum.Get();
      std::vector<float> want(nc);
      for (size_t i = 0; i < nc; ++i) want[i] = h_m[i] + prod[i];
      EXPECT_EQ(0, std::memcmp(want.data(), sum.data(), nc * sizeof(float)));
      EXPECT_EQ((*gemm)->pinned_count(), 1u);  // one site whatever beta
    }
  }
}

// HGRN2-1.3B's MLP down projection (N 2,048, K 5,632), the 1.3B models' o_proj (N = K =
// 2,048: HGRN2's, GLA's, TNL's and LLaMA's) and a small one in both modes.
INSTANTIATE_TEST_SUITE_P(Shapes, PinnedGemmBetaTest,
                         ::testing::Values(BetaCase{2048, 5632, Act::kBF16},
                                           BetaCase{2048, 2048, Act::kBF16},
                                           BetaCase{256, 384, Act::kBF16},
                                           BetaCase{256, 384, Act::kF32}));

}  // namespace
}  // namespace hgeval::cuda
