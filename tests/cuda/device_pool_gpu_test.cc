// The device pool under a full budget: a block of a new size makes the pool give back its
// longest-cached blocks, only as many as the budget needs, and the blocks cached since stay
// for reuse (before, every cached block went back to the driver and was asked for again).
#include <cstddef>

#include "engine/cuda/device.h"
#include "engine/cuda/host_counters.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/support/scoped_budget_limit.h"

namespace hgeval {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(DevicePoolGpuTest, FullBudgetGivesBackOnlyTheOldestBlocksItNeeds) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  cuda::DevicePool pool(0);
  MemoryBudget* budget = pool.budget();
  // Room for 64 MiB besides what the process holds already (a sixteenth of it, 4 MiB
  // plus, is less than any block here, so the give-back frees what the block needs).
  testing::ScopedBudgetLimit limit(budget, budget->held() + 64 * kMiB);
  void* blocks[3];
  for (void*& b : blocks) {
    auto p = pool.Allocate(16 * kMiB);
    ASSERT_TRUE(p.ok()) << p.status();
    b = *p;
  }
  for (void* b : blocks) pool.Free(b);  // cached oldest first: blocks[0], [1], [2]

  cuda::CudaHostCounters& counters = cuda::CudaHostCounters::Get();
  const cuda::CudaHostCounts before = counters.Snapshot();
  // 48 MiB cached, 16 MiB free: 32 MiB needs one cached block back, the oldest.
  auto big = pool.Allocate(32 * kMiB);
  ASSERT_TRUE(big.ok()) << big.status();
  const cuda::CudaHostCounts gave = counters.Snapshot() - before;
  EXPECT_EQ(gave.give_backs, 1);
  EXPECT_EQ(gave.driver_frees, 1);
  EXPECT_EQ(gave.driver_mallocs, 1);

  // The two newer blocks are still cached: served without the driver, newest included.
  const cuda::CudaHostCounts again = counters.Snapshot();
  auto x = pool.Allocate(16 * kMiB);
  auto y = pool.Allocate(16 * kMiB);
  ASSERT_TRUE(x.ok() && y.ok());
  const cuda::CudaHostCounts reused = counters.Snapshot() - again;
  EXPECT_EQ(reused.pool_hits, 2);
  EXPECT_EQ(reused.driver_mallocs, 0);
  EXPECT_TRUE((*x == blocks[1] && *y == blocks[2]) || (*x == blocks[2] && *y == blocks[1]));
  EXPECT_LE(budget->held(), budget->limit());

  // Nothing cached and no room: refused before the driver is asked.
  const cuda::CudaHostCounts full = counters.Snapshot();
  auto refused = pool.Allocate(16 * kMiB);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((counters.Snapshot() - full).driver_mallocs, 0);
  pool.Free(*big);
  pool.Free(*x);
  pool.Free(*y);
  pool.Trim();
}

}  // namespace
}  // namespace hgeval
