// LogSoftmaxGather against a float64 log-softmax, and its row cache: it keeps a row's
// first 48K floats in shared memory (one DRAM read per row), and its results must not
// depend on that cache. Rows whose start is not 16-byte aligned run uncached, so the same
// rows one float further into a buffer are the reference, bitwise.
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

struct SoftmaxResult {
  std::vector<float> lp, rows;
  std::vector<int32_t> am;
};

// Runs the kernel on `logits` placed `offset` floats into a device buffer.
SoftmaxResult RunSoftmax(const std::vector<float>& logits, int rows, int vocab,
                         const std::vector<int32_t>& targets, int offset) {
  std::vector<float> padded(offset, 0.0f);
  padded.insert(padded.end(), logits.begin(), logits.end());
  Dev<float> dl(padded), dlp(rows);
  Dev<int32_t> dt(targets), dam(rows);
  EXPECT_EQ(LogSoftmaxGather(dl.get() + offset, rows, vocab, dt.get(), dlp.get(), dam.get(),
                             /*normalize=*/true, nullptr),
            cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  SoftmaxResult r{dlp.Get(), dl.Get(), dam.Get()};
  r.rows.erase(r.rows.begin(), r.rows.begin() + offset);
  return r;
}

// The kernel's outputs against a float64 log-softmax: argmax (lowest id on ties), the
// target's log-prob (0 without a target) and every col_step-th normalised logit.
void ExpectMatchesFloat64(const std::vector<float>& logits, int rows, int vocab,
                          const std::vector<int32_t>& targets, const SoftmaxResult& got,
                          int col_step) {
  for (int r = 0; r < rows; ++r) {
    const float* row = logits.data() + static_cast<size_t>(r) * vocab;
    double mx = row[0];
    int best = 0;
    for (int v = 1; v < vocab; ++v) {
      if (row[v] > mx) {
        mx = row[v];
        best = v;
      }
    }
    double s = 0;
    for (int v = 0; v < vocab; ++v) s += std::exp(row[v] - mx);
    const double lse = mx + std::log(s);
    EXPECT_EQ(got.am[r], best) << r;
    if (targets[r] >= 0) {
      EXPECT_NEAR(got.lp[r], row[targets[r]] - lse, 1e-4 * std::max(1.0, std::fabs(lse))) << r;
    } else {
      EXPECT_EQ(got.lp[r], 0.0f);
    }
    for (int v = 0; v < vocab; v += col_step) {
      EXPECT_NEAR(got.rows[static_cast<size_t>(r) * vocab + v], row[v] - lse,
                  1e-4 * (1 + std::fabs(lse)))
          << r << " " << v;
    }
  }
}

TEST(LogSoftmaxGatherTest, MatchesReference) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const int rows = 37, vocab = 32000;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (auto& x : logits) x = nd(rng);
  logits[3 * vocab + 17] = logits[3 * vocab + 5] = 100.0f;  // tie: lowest id wins
  std::vector<int32_t> targets(rows);
  for (int r = 0; r < rows; ++r) targets[r] = r == 4 ? -1 : (r * 997) % vocab;
  const SoftmaxResult got = RunSoftmax(logits, rows, vocab, targets, 0);
  ExpectMatchesFloat64(logits, rows, vocab, targets, got, /*col_step=*/101);
  EXPECT_EQ(got.am[3], 5);
}

class LogSoftmaxGatherCacheTest : public ::testing::TestWithParam<int> {};

TEST_P(LogSoftmaxGatherCacheTest, CachedRowsEqualUncachedBitwiseAndFloat64) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const int vocab = GetParam(), rows = 9;
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 4.0f);
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (auto& x : logits) x = nd(rng);
  // Ties: lowest id wins, inside the cached part, past it (vocab > 49,152) and across.
  auto at = [&](int r, int v) -> float& { return logits[static_cast<size_t>(r) * vocab + v]; };
  at(1, vocab - 2) = at(1, vocab / 2) = 100.0f;
  at(2, vocab - 1) = at(2, vocab - 3) = 100.0f;
  at(3, 7) = at(3, vocab - 1) = 100.0f;
  std::vector<int32_t> targets(rows);
  for (int r = 0; r < rows; ++r) targets[r] = r == 4 ? -1 : (r * 7919 + vocab - 5) % vocab;
  targets[5] = vocab - 1;  // the row's last float (past the cache when vocab > 49,152)

  const SoftmaxResult cached = RunSoftmax(logits, rows, vocab, targets, 0);
  const SoftmaxResult uncached = RunSoftmax(logits, rows, vocab, targets, 1);
  EXPECT_EQ(std::memcmp(cached.lp.data(), uncached.lp.data(), rows * sizeof(float)), 0);
  EXPECT_EQ(cached.am, uncached.am);
  EXPECT_EQ(std::memcmp(cached.rows.data(), uncached.rows.data(), logits.size() * sizeof(float)),
            0);

  ExpectMatchesFloat64(logits, rows, vocab, targets, cached, /*col_step=*/97);
  EXPECT_EQ(cached.am[1], vocab / 2);
  EXPECT_EQ(cached.am[2], vocab - 3);
  EXPECT_EQ(cached.am[3], 7);
}

// 64,000: a cached head and an uncached tail (TNL's vocabulary); 32,000: all cached
// (HGRN2's); 50,260 and 12: all cached with a float4 remainder loop; 50,257: not a
// multiple of 4, never cached (the reference path itself).
INSTANTIATE_TEST_SUITE_P(Vocabularies, LogSoftmaxGatherCacheTest,
                         ::testing::Values(64000, 32000, 50260, 50257, 12));

}  // namespace
}  // namespace hgeval::cuda
