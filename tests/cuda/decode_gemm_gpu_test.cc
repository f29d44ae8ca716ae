// The decode step's skinny bf16 GEMM (decode_gemm.h) against a float64 reference at the
// 1.3B shapes and at odd ones (N, K not multiples of 128; M = 1, 3, 8, 17, 32), and its batch
// invariance: row r computed alone (M = 1) or among M = 3, 8, 17 rows equals row r of an
// M = 32 call bitwise; its two kernels (block, stream) give the same bits as each other at
// every M; and accumulating into C gives the bits of the product plus C. Run under a
// switch that keeps the bits (HGEVAL_DECODE_GEMM_TILES, _CACHE_A=0, _AHEAD; docs/cuda.md,
// Measurement switches), the same checks cover that choice.
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <vector>

#include "engine/cuda/decode_gemm.h"
#include "engine/cuda/kernels_decode_gemm.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/device_vector.h"

namespace hgeval::cuda {
namespace {

// bf16 operands, fp32 accumulation: ‖out − ref‖ / ‖ref‖ well under 1e-3 once the
// reference uses the same bf16-rounded operands (only the fp32 sum order differs).
constexpr double kBound = 1e-4;

struct Shape {
  int n, k;
};

void PrintTo(const Shape& s, std::ostream* os) { *os << s.n << "x" << s.k; }

std::vector<__nv_bfloat16> RandomBf16(size_t count, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<__nv_bfloat16> out(count);
  for (auto& v : out) v = __float2bfloat16(nd(rng));
  return out;
}

// C[r, j] = sum over q of A[r, q] W[j, q] in float64, for A's first m rows.
std::vector<double> Float64Product(const std::vector<__nv_bfloat16>& a,
                                   const std::vector<__nv_bfloat16>& w, int m, int n, int k) {
  std::vector<double> c(static_cast<size_t>(m) * n);
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int q = 0; q < k; ++q) {
        s += static_cast<double>(__bfloat162float(a[static_cast<size_t>(r) * k + q])) *
             __bfloat162float(w[static_cast<size_t>(j) * k + q]);
      }
      c[static_cast<size_t>(r) * n + j] = s;
    }
  }
  return c;
}

// A's kDecodeGemmMaxRows rows and W's n rows for a shape: random bf16 from a generator
// seeded by the shape and `salt` (each test its own values), on the host for references
// and on the device.
struct Operands {
  static constexpr int kRows = static_cast<int>(kDecodeGemmMaxRows);
  Operands(const Shape& shape, int salt)
      : n(shape.n),
        k(shape.k),
        rng(static_cast<uint32_t>(shape.n * salt + shape.k)),
        a_host(RandomBf16(static_cast<size_t>(kRows) * k, rng)),
        w_host(RandomBf16(static_cast<size_t>(n) * k, rng)),
        a(a_host),
        w(w_host) {}
  int n, k;
  std::mt19937 rng;  // a test's further random values
  std::vector<__nv_bfloat16> a_host, w_host;
  Dev<__nv_bfloat16> a, w;
};

class CudaDecodeGemmTest : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  }
};

TEST_P(CudaDecodeGemmTest, MatchesFloat64AndRowsAloneEqualRowsInABatch) {
  Operands op(GetParam(), 7919);
  const int n = op.n, k = op.k, full = Operands::kRows;
  const std::vector<double> ref = Float64Product(op.a_host, op.w_host, full, n, k);

  std::vector<float> batch;
  std::vector<std::vector<float>> fewer;  // M = 1, 3, 8, 17
  for (int m : {1, 3, 8, 17, 32}) {
    Dev<float> c(static_cast<size_t>(m) * n);
    ASSERT_TRUE(DecodeGemmNT(nullptr, m, n, k, MatRef{op.a.get(), Act::kBF16, k},
                             MatRef{op.w.get(), Act::kBF16, k}, c.get(), Act::kF32, n)
                    .ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<float> out = c.Get();
    const std::vector<double> want(ref.begin(), ref.begin() + static_cast<size_t>(m) * n);
    EXPECT_LT(RelErr(out, want), kBound) << "M=" << m;
    if (m == full) {
      batch = out;
    } else {
      fewer.push_back(out);
    }
  }
  // The first rows of a smaller batch (fewer 8-row tiles, no padding work) are those rows
  // of the full one, bitwise.
  for (const std::vector<float>& out : fewer) {
    EXPECT_EQ(std::memcmp(out.data(), batch.data(), out.size() * sizeof(float)), 0)
        << "M=" << out.size() / n;
  }

  // Each row alone (M = 1, its own pointer) against its place among 32.
  for (int r : {0, 1, 7, 8, 13, 16, 17, 24, 31}) {
    Dev<float> c(static_cast<size_t>(n));
    const __nv_bfloat16* row = op.a.get() + static_cast<size_t>(r) * k;
    ASSERT_TRUE(DecodeGemmNT(nullptr, 1, n, k, MatRef{row, Act::kBF16, k},
                             MatRef{op.w.get(), Act::kBF16, k}, c.get(), Act::kF32, n)
                    .ok());
    const std::vector<float> alone = c.Get();
    EXPECT_EQ(
        std::memcmp(alone.data(), batch.data() + static_cast<size_t>(r) * n, n * sizeof(float)), 0)
        << "row " << r;
  }
}

TEST_P(CudaDecodeGemmTest, EveryFormGivesTheSameBitsAtEveryRowCount) {
  Operands op(GetParam(), 31);
  const int n = op.n, k = op.k;
  for (const bool f32 : {true, false}) {
    for (int m : {1, 3, 8, 9, 17, 32}) {
      std::vector<std::vector<unsigned char>> outs;
      for (const DecodeGemmForm form : {DecodeGemmForm::kBlock, DecodeGemmForm::kStream}) {
        const size_t bytes = static_cast<size_t>(m) * n * (f32 ? 4 : 2);
        Dev<unsigned char> c(bytes);
        ASSERT_EQ(cudaMemset(c.get(), 0xff, bytes), cudaSuccess);
        ASSERT_EQ(LaunchDecodeGemmForm(form, nullptr, m, n, k, op.a.get(), k, op.w.get(), k,
                                       c.get(), f32, n),
                  cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        outs.push_back(c.Get());
      }
      EXPECT_EQ(outs[0], outs[1]) << "block vs stream, M=" << m << " f32=" << f32;
    }
  }
}

// The decode step's residual add in the epilogue (decode_gemm.h): C += the product,
// bitwise the product written alone plus C in fp32 (AddRmsNorm's h + delta), in both forms
// at every row count.
TEST_P(CudaDecodeGemmTest, AccumulateAddsTheProductAsOneFloatAdd) {
  Operands op(GetParam(), 131);
  const int n = op.n, k = op.k;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const DecodeGemmForm form : {DecodeGemmForm::kBlock, DecodeGemmForm::kStream}) {
    for (int m : {1, 8, 17, 32}) {
      const size_t count = static_cast<size_t>(m) * n;
      Dev<float> product(count);
      ASSERT_EQ(
          LaunchDecodeGemmForm(form, nullptr, m, n, k, op.a.get(), k, op.w.get(), k, product.get(),
                               /*c_f32=*/true, n),
          cudaSuccess);
      std::vector<float> c_host(count);
      for (auto& v : c_host) v = nd(op.rng);
      Dev<float> c(c_host);
      ASSERT_EQ(LaunchDecodeGemmForm(form, nullptr, m, n, k, op.a.get(), k, op.w.get(), k, c.get(),
                                     /*c_f32=*/true, n, /*accumulate=*/true),
                cudaSuccess);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const std::vector<float> alone = product.Get();
      std::vector<float> sum(count);
      for (size_t i = 0; i < count; ++i) sum[i] = c_host[i] + alone[i];
      EXPECT_EQ(c.Get(), sum) << "M=" << m << " form=" << static_cast<int>(form);
    }
  }
}

// 1.3B (d 2048, MLP 5632, vocab 32000) and odd shapes; the head's 32000 rows and the
// MLP's 11264 exercise the wider tiles.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaDecodeGemmTest,
                         ::testing::Values(Shape{2048, 2048}, Shape{11264, 2048}, Shape{2048, 5632},
                                           Shape{32000, 2048}, Shape{6144, 2048}, Shape{1000, 1000},
                                           Shape{77, 40}, Shape{4104, 8}, Shape{17000, 264}));

TEST(CudaDecodeGemmTest, BfloatOutputAndRefusals) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const int n = 300, k = 136, m = 5;
  std::mt19937 rng(5);
  const std::vector<__nv_bfloat16> a_host = RandomBf16(static_cast<size_t>(m) * k, rng);
  const std::vector<__nv_bfloat16> w_host = RandomBf16(static_cast<size_t>(n) * k, rng);
  Dev<__nv_bfloat16> a(a_host), w(w_host), c(static_cast<size_t>(m) * n);
  ASSERT_TRUE(DecodeGemmNT(nullptr, m, n, k, MatRef{a.get(), Act::kBF16, k},
                           MatRef{w.get(), Act::kBF16, k}, c.get(), Act::kBF16, n)
                  .ok());
  const std::vector<__nv_bfloat16> out = c.Get();
  const std::vector<double> ref = Float64Product(a_host, w_host, m, n, k);
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_NEAR(__bfloat162float(out[i]), ref[i], 1e-2 * std::fabs(ref[i]) + 1e-3) << "at " << i;
  }
  EXPECT_FALSE(
      DecodeGemmFits(33, k, MatRef{a.get(), Act::kBF16, k}, MatRef{w.get(), Act::kBF16, k}));
  EXPECT_FALSE(
      DecodeGemmFits(1, 12, MatRef{a.get(), Act::kBF16, 12}, MatRef{w.get(), Act::kBF16, 12}));
  EXPECT_FALSE(DecodeGemmFits(1, k, MatRef{a.get(), Act::kF32, k}, MatRef{w.get(), Act::kF32, k}));
  // Accumulation is into an fp32 C only.
  EXPECT_FALSE(DecodeGemmNT(nullptr, m, n, k, MatRef{a.get(), Act::kBF16, k},
                            MatRef{w.get(), Act::kBF16, k}, c.get(), Act::kBF16, n,
                            /*accumulate=*/true)
                   .ok());
  EXPECT_EQ(LaunchDecodeGemmForm(DecodeGemmForm::kStream, nullptr, m, n, k, a.get(), k, w.get(), k,
                                 c.get(), /*c_f32=*/false, n, /*accumulate=*/true),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace hgeval::cuda
