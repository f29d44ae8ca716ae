// SwiGlu's 16-byte vector path (aligned pointers, inter a multiple of the vector) against
// its element-by-element path (taken for a misaligned output): bitwise equal, for both
// activation types and TNL's unactivated GLU; and both near the CPU's value. In place (out
// over gu's g half, rows 2 inter apart, as the model's MLP runs it) gives the same bits.
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

struct SwiGluCase {
  Act act;
  bool silu;
};

// gtest would print the case's bytes (padding included) into the ctest name.
void PrintTo(const SwiGluCase& c, std::ostream* os) {
  *os << (c.act == Act::kF32 ? "f32" : "bf16") << (c.silu ? "_silu" : "_glu");
}

class SwiGluTest : public ::testing::TestWithParam<SwiGluCase> {};

float ToFloat(const std::vector<uint8_t>& bytes, size_t i, Act act) {
  if (act == Act::kF32) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
  }
  uint16_t b;
  std::memcpy(&b, bytes.data() + 2 * i, 2);
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST_P(SwiGluTest, VectorPathEqualsElementPathBitwise) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const SwiGluCase c = GetParam();
  const int rows = 37, inter = 5632;
  const size_t es = ActSize(c.act);
  const size_t n_in = static_cast<size_t>(rows) * 2 * inter,
               n_out = static_cast<size_t>(rows) * inter;
  std::mt19937 rng(c.silu + 2 * static_cast<int>(c.act));
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<uint8_t> gu(n_in * es);
  for (size_t i = 0; i < n_in; ++i) {
    const float f = nd(rng);
    if (c.act == Act::kF32) {
      std::memcpy(gu.data() + 4 * i, &f, 4);
    } else {
      uint32_t u;
      std::memcpy(&u, &f, 4);
      const uint16_t b = static_cast<uint16_t>(u >> 16);  // truncation: any bf16 will do
      std::memcpy(gu.data() + 2 * i, &b, 2);
    }
  }
  Dev<uint8_t> dgu(gu), vec_out(n_out * es), elem_out((n_out + 1) * es);
  ASSERT_EQ(SwiGlu(dgu.get(), rows, inter, vec_out.get(), c.act, nullptr, c.silu), cudaSuccess);
  // One element in: the output is no longer 16-byte aligned, so the element path runs.
  ASSERT_EQ(SwiGlu(dgu.get(), rows, inter, elem_out.get() + es, c.act, nullptr, c.silu),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const std::vector<uint8_t> a = vec_out.Get(), b = elem_out.Get();
  EXPECT_EQ(std::memcmp(a.data(), b.data() + es, n_out * es), 0);
  double worst = 0;
  for (int r = 0; r < rows; ++r) {
    for (int j = 0; j < inter; j += 97) {
      const double g = ToFloat(gu, static_cast<size_t>(r) * 2 * inter + j, c.act);
      const double u = ToFloat(gu, static_cast<size_t>(r) * 2 * inter + inter + j, c.act);
      const double want = (c.silu ? g / (1.0 + std::exp(-g)) : g) * u;
      const double got = ToFloat(a, static_cast<size_t>(r) * inter + j, c.act);
      worst = std::max(worst, std::abs(got - want) / (std::abs(want) + 1e-3));
    }
  }
  EXPECT_LT(worst, c.act == Act::kF32 ? 1e-5 : 1e-2);

  // In place, both paths: out = gu (vector path) and a copy of gu one element in (the
  // element path, out misaligned), each row's result over its own g half.
  for (const size_t shift : {size_t{0}, size_t{1}}) {
    Dev<uint8_t> in_place((n_in + shift) * es);
    ASSERT_EQ(
        cudaMemcpy(in_place.get() + shift * es, dgu.get(), n_in * es, cudaMemcpyDeviceToDevice),
        cudaSuccess);
    uint8_t* base = in_place.get() + shift * es;
    ASSERT_EQ(SwiGlu(base, rows, inter, base, c.act, nullptr, c.silu, 2 * inter), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const std::vector<uint8_t> got = in_place.Get();
    for (int r = 0; r < rows; ++r) {
      const size_t row_out = static_cast<size_t>(r) * inter * es;
      const size_t row_in = (shift + static_cast<size_t>(r) * 2 * inter) * es;
      ASSERT_EQ(std::memcmp(a.data() + row_out, got.data() + row_in, inter * es), 0)
          << "row " << r << (shift ? " (element path)" : " (vector path)");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SwiGluTest,
                         ::testing::Values(SwiGluCase{Act::kF32, true},
                                           SwiGluCase{Act::kF32, false},
                                           SwiGluCase{Act::kBF16, true},
                                           SwiGluCase{Act::kBF16, false}));

}  // namespace
}  // namespace hgeval::cuda
