// LoadOptions::threads / ScopedCpuThreads: the CPU pool uses at most the asked number of
// threads per call, and the results do not depend on it.
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "engine/cpu/ops.h"
#include "engine/model/load_model.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

// The distinct threads that ran a ParallelFor of `n` slow-enough items.
size_t ThreadsUsed(int64_t n) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  cpu::ParallelFor(n, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  return ids.size();
}

TEST(CpuThreadsTest, ScopedLimitBoundsTheThreadsOfParallelFor) {
  {
    cpu::ScopedCpuThreads one(1);
    std::set<std::thread::id> ids;
    cpu::ParallelFor(64, [&](int64_t) { ids.insert(std::this_thread::get_id()); });
    EXPECT_EQ(ids, std::set<std::thread::id>{std::this_thread::get_id()});
    {
      cpu::ScopedCpuThreads two(2);
      EXPECT_LE(ThreadsUsed(64), 2u);
    }
    // The outer limit is back.
    EXPECT_EQ(ThreadsUsed(64), 1u);
  }
  EXPECT_LE(ThreadsUsed(64), std::max(1u, std::thread::hardware_concurrency()));
}

TEST(CpuThreadsTest, ModelResultsDoNotDependOnTheThreadCount) {
  const std::string path = testing::SourcePath("tests/golden/hgrn2");
  LoadOptions all, one;
  one.threads = 1;
  absl::StatusOr<std::unique_ptr<Model>> a = LoadModel(path, all);
  absl::StatusOr<std::unique_ptr<Model>> b = LoadModel(path, one);
  ASSERT_TRUE(a.ok() && b.ok());
  ScoreRequest request;
  for (int i = 0; i < 200; ++i) request.context.push_back((i * 31 + 7) % 500 + 3);
  request.continuation = {5, 6, 7, 8};
  absl::StatusOr<std::vector<ScoreResult>> ra = Score(**a, {request});
  absl::StatusOr<std::vector<ScoreResult>> rb = Score(**b, {request});
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ((*ra)[0].token_logprobs, (*rb)[0].token_logprobs);

  LoadOptions negative;
  negative.threads = -1;
  EXPECT_EQ(LoadModel(path, negative).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hgeval
