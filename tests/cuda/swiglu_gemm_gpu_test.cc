// The packs' fused gate|up GEMM and SwiGLU (kernels_swiglu_gemm.h) against the path it
// replaces, the pinned cuBLASLt GEMM into bf16 followed by SwiGlu (bitwise), and against
// float64, at the 1.3B model's shape and at odd ones (M not a multiple of 128, inter not a
// multiple of 128, K not a multiple of 64, TNL's GLU without activation); and its batch
// invariance: a row computed alone, or in a call that starts elsewhere, equals the same
// row in a whole call bitwise.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <vector>

#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/kernels_swiglu_gemm.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"

namespace hgeval::cuda {
namespace {

struct FusedCase {
  int m, inter, k;
  bool silu;
};

void PrintTo(const FusedCase& c, std::ostream* os) {
  *os << c.m << "x" << c.inter << "x" << c.k << (c.silu ? "_silu" : "_glu");
}

float Bf16ToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

class SwiGluGemmTest : public ::testing::TestWithParam<FusedCase> {
 protected:
  void SetUp() override {
    if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
    if (!SwiGluGemmAvailable()) GTEST_SKIP() << "no sm_90a kernel for this device";
  }
};

TEST_P(SwiGluGemmTest, EqualsPinnedGemmThenSwiGluAndFloat64) {
  const FusedCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.m * 31 + c.inter * 7 + c.k));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(c.m) * c.k), w(static_cast<size_t>(2) * c.inter * c.k);
  for (auto& v : x) v = nd(rng);
  const float w_scale = 1.0f / std::sqrt(static_cast<float>(c.k));
  for (auto& v : w) v = nd(rng) * w_scale;
  const std::vector<uint16_t> x16 = RoundedBf16Bits(x), w16 = RoundedBf16Bits(w);
  Dev<uint16_t> dx(x16), dw(w16);
  const size_t n_out = static_cast<size_t>(c.m) * c.inter;

  Dev<uint16_t> fused(n_out);
  ASSERT_EQ(LaunchSwiGluGemm(nullptr, c.m, c.inter, c.k, dx.get(), c.k, dw.get(), c.k, c.silu,
                             fused.get(), c.inter),
            cudaSuccess);
  auto pinned = PinnedGemm::Create(16384);
  ASSERT_TRUE(pinned.ok()) << pinned.status();
  Dev<uint16_t> gu(static_cast<size_t>(c.m) * 2 * c.inter), unfused(n_out);
  ASSERT_TRUE((*pinned)
                  ->Run(nullptr, c.m, 2 * c.inter, c.k, MatRef{dx.get(), Act::kBF16, c.k},
                        MatRef{dw.get(), Act::kBF16, c.k}, gu.get(), Act::kBF16, 2 * c.inter)
                  .ok());
  ASSERT_EQ(SwiGlu(gu.get(), c.m, c.inter, unfused.get(), Act::kBF16, nullptr, c.silu, c.inter),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint16_t> got = fused.Get(), want = unfused.Get();
  size_t differ = 0;
  for (size_t i = 0; i < n_out; ++i) differ += got[i] != want[i];
  std::cout << "bf16 outputs differing from the pinned GEMM + SwiGlu: " << differ << " of " << n_out
            << "\n";

  // float64 over a few rows (the first, both sides of a tile boundary, the last).
  std::vector<float> got_rows;
  std::vector<double> ref_rows;
  for (int r : {0, 1, 127, 128, c.m - 1}) {
    if (r >= c.m) continue;
    for (int col = 0; col < c.inter; ++col) {
      double g = 0, u = 0;
      for (int q = 0; q < c.k; ++q) {
        const double xv = Bf16ToFloat(x16[static_cast<size_t>(r) * c.k + q]);
        g += xv * Bf16ToFloat(w16[static_cast<size_t>(col) * c.k + q]);
        u += xv * Bf16ToFloat(w16[static_cast<size_t>(c.inter + col) * c.k + q]);
      }
      ref_rows.push_back((c.silu ? g / (1.0 + std::exp(-g)) : g) * u);
      got_rows.push_back(Bf16ToFloat(got[static_cast<size_t>(r) * c.inter + col]));
    }
  }
  // bf16 products and output: a few parts in 1,000 (a wrong tile or layout is order 1).
  EXPECT_LT(RelErr(got_rows, ref_rows), 1e-2);
}

TEST_P(SwiGluGemmTest, RowsAloneOrElsewhereEqualRowsOfTheWholeCall) {
  const FusedCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.inter + c.k));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(c.m) * c.k), w(static_cast<size_t>(2) * c.inter * c.k);
  for (auto& v : x) v = nd(rng);
  for (auto& v : w) v = nd(rng) * 0.05f;
  Dev<uint16_t> dx(RoundedBf16Bits(x)), dw(RoundedBf16Bits(w));
  const size_t row_elems = static_cast<size_t>(c.inter);
  Dev<uint16_t> whole(c.m * row_elems);
  ASSERT_EQ(LaunchSwiGluGemm(nullptr, c.m, c.inter, c.k, dx.get(), c.k, dw.get(), c.k, c.silu,
                             whole.get(), c.inter),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint16_t> all = whole.Get();
  // (first row, rows) of the other calls: one row alone at several tile positions, and a
  // block starting mid-tile.
  const int mid = c.m / 2;
  for (const auto [r0, rows] :
       {std::pair{0, 1}, std::pair{c.m - 1, 1}, std::pair{mid, 1}, std::pair{mid, c.m - mid}}) {
    SCOPED_TRACE(::testing::Message() << "rows " << r0 << ".." << r0 + rows - 1);
    Dev<uint16_t> part(static_cast<size_t>(rows) * row_elems);
    ASSERT_EQ(
        LaunchSwiGluGemm(nullptr, rows, c.inter, c.k, dx.get() + static_cast<size_t>(r0) * c.k, c.k,
                         dw.get(), c.k, c.silu, part.get(), c.inter),
        cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint16_t> got = part.Get();
    EXPECT_EQ(std::memcmp(got.data(), all.data() + static_cast<size_t>(r0) * row_elems,
                          got.size() * sizeof(uint16_t)),
              0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SwiGluGemmTest,
                         ::testing::Values(FusedCase{300, 5632, 2048, true},
                                           FusedCase{1, 5632, 2048, true},
                                           FusedCase{130, 200, 72, true},
                                           FusedCase{257, 1408, 2048, false},
                                           FusedCase{64, 384, 4096, true}));

}  // namespace
}  // namespace hgeval::cuda
