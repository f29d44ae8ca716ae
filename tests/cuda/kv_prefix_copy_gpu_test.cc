// CopyKvPrefixes (the batched copy of read-only forks' KV caches) copies exactly the
// leading bytes of every plane of every copy, at each access width, and nothing after.
#include <algorithm>
#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/cuda/kernels_kv_copy.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"

namespace hgeval::cuda {
namespace {

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

class KvPrefixCopyGpuTest : public ::testing::TestWithParam<int> {};

TEST_P(KvPrefixCopyGpuTest, CopiesEveryPlanesPrefixAndNothingElse) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const int unit = GetParam();
  const int planes = 6;
  const int64_t row = 16 * unit;  // a KV row's bytes: a multiple of the unit
  // (source capacity, destination capacity, positions copied) in rows.
  const std::vector<std::array<int64_t, 3>> shapes = {{64, 128, 37}, {64, 64, 64}, {192, 256, 130},
                                                      {64, 128, 1},  {64, 64, 0},  {320, 384, 300}};
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> src_host, expected;
  std::vector<void*> src_dev, dst_dev;
  std::vector<KvPrefixCopy> copies;
  int64_t longest = 0;
  for (const auto& [src_cap, dst_cap, n] : shapes) {
    std::vector<uint8_t> s(planes * src_cap * row), d(planes * dst_cap * row, 0xA5);
    for (uint8_t& b : s) b = static_cast<uint8_t>(rng());
    for (int p = 0; p < planes; ++p) {
      for (int64_t i = 0; i < n * row; ++i) d[p * dst_cap * row + i] = s[p * src_cap * row + i];
    }
    void *sd = nullptr, *dd = nullptr;
    ASSERT_CUDA(cudaMalloc(&sd, s.size()));
    ASSERT_CUDA(cudaMalloc(&dd, d.size()));
    ASSERT_CUDA(cudaMemcpy(sd, s.data(), s.size(), cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(dd, 0xA5, d.size()));
    KvPrefixCopy c;
    c.src = sd;
    c.dst = dd;
    c.src_plane_bytes = src_cap * row;
    c.dst_plane_bytes = dst_cap * row;
    c.bytes = n * row;
    copies.push_back(c);
    longest = std::max(longest, c.bytes);
    src_dev.push_back(sd);
    dst_dev.push_back(dd);
    expected.push_back(std::move(d));
  }
  void* table_bytes = nullptr;
  ASSERT_CUDA(cudaMalloc(&table_bytes, copies.size() * sizeof(KvPrefixCopy)));
  auto* table = static_cast<KvPrefixCopy*>(table_bytes);
  ASSERT_CUDA(cudaMemcpy(table, copies.data(), copies.size() * sizeof(KvPrefixCopy),
                         cudaMemcpyHostToDevice));
  ASSERT_CUDA(
      CopyKvPrefixes(table, static_cast<int>(copies.size()), planes, longest, unit, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  for (size_t i = 0; i < copies.size(); ++i) {
    std::vector<uint8_t> got(expected[i].size());
    ASSERT_CUDA(cudaMemcpy(got.data(), dst_dev[i], got.size(), cudaMemcpyDeviceToHost));
    EXPECT_EQ(got, expected[i]) << "copy " << i << ", unit " << unit;
    cudaFree(src_dev[i]);
    cudaFree(dst_dev[i]);
  }
  cudaFree(table);
  EXPECT_EQ(CopyKvPrefixes(table, 1, planes, longest, 3, nullptr), cudaErrorInvalidValue);
}

INSTANTIATE_TEST_SUITE_P(Units, KvPrefixCopyGpuTest, ::testing::Values(16, 4, 1));

}  // namespace
}  // namespace hgeval::cuda
