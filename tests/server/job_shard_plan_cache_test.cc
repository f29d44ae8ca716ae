// The replica's plan cache holds a few plans within a byte budget, oldest out first.
#include "server/jobs/job_shard_plan_cache.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "hgeval/v1/jobs.pb.h"
#include "server/jobs/job_shard_plan.h"
#include "tasks/api/registry.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {

// A plan of one task with `docs` docs of `chars` characters each.
std::shared_ptr<const JobShardPlan> PlanOfDocs(int docs, size_t chars) {
  auto plan = std::make_shared<JobShardPlan>();
  plan->shards.push_back({ShardKind::kWholeTask, 0, {}, docs, {}});
  plan->docs.resize(1);
  for (int d = 0; d < docs; ++d) {
    plan->docs[0].push_back({{"question", std::string(chars, 'q')}, {"label", d}});
  }
  return plan;
}

TEST(JobShardPlanCacheTest, APlansBytesGrowWithItsDocs) {
  const int64_t small = EstimatedPlanBytes(*PlanOfDocs(10, 100));
  const int64_t large = EstimatedPlanBytes(*PlanOfDocs(1000, 100));
  EXPECT_GE(small, 10 * 100);
  EXPECT_GE(large, 1000 * 100);
  EXPECT_GT(large, 50 * small);
}

TEST(JobShardPlanCacheTest, DropsTheOldestPlansToStayWithinItsBytes) {
  auto plan = PlanOfDocs(100, 1000);
  const int64_t bytes = EstimatedPlanBytes(*plan);
  JobShardPlanCache cache(/*max_bytes=*/3 * bytes, /*max_plans=*/8);
  for (const char* key : {"a", "b", "c"}) cache.Insert(key, plan, bytes);
  EXPECT_EQ(cache.size(), 3u);
  cache.Insert("d", plan, bytes);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_LE(cache.bytes(), 3 * bytes);
  EXPECT_EQ(cache.Find("a"), nullptr);
  EXPECT_EQ(cache.Find("d"), plan);
  EXPECT_EQ(cache.Find("b"), plan);
}

TEST(JobShardPlanCacheTest, DropsTheOldestPlansToStayWithinItsCount) {
  auto plan = PlanOfDocs(1, 10);
  const int64_t bytes = EstimatedPlanBytes(*plan);
  JobShardPlanCache cache(/*max_bytes=*/int64_t{1} << 30, /*max_plans=*/2);
  for (const char* key : {"a", "b", "c"}) cache.Insert(key, plan, bytes);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.Find("a"), nullptr);
  EXPECT_NE(cache.Find("c"), nullptr);
}

TEST(JobShardPlanCacheTest, KeepsNoPlanLargerThanItsWholeBudget) {
  auto small = PlanOfDocs(1, 10);
  auto large = PlanOfDocs(1000, 1000);
  JobShardPlanCache cache(/*max_bytes=*/EstimatedPlanBytes(*large) - 1, /*max_plans=*/8);
  cache.Insert("small", small, EstimatedPlanBytes(*small));
  cache.Insert("large", large, EstimatedPlanBytes(*large));
  EXPECT_EQ(cache.Find("large"), nullptr);
  EXPECT_EQ(cache.Find("small"), small);  // the refused plan evicted nothing
}

// Two callers ask for one job's plan at once: the second waits for the first's plan
// instead of loading the docs again. The first caller's computation holds until the second
// computes (which only a cache without the wait lets it do) or 1 s has passed.
TEST(JobShardPlanCacheTest, CallersAskingForOnePlanAtOnceComputeItOnce) {
  JobShardPlanCache cache(/*max_bytes=*/int64_t{1} << 30, /*max_plans=*/8);
  auto plan = PlanOfDocs(10, 10);
  std::atomic<int> computed{0};
  absl::Notification first_started, second_computed;
  JobShardPlanCache::PlanOrError first, second;
  std::thread a([&] {
    first = cache.FindOrCompute("job", [&]() -> JobShardPlanCache::PlanOrError {
      ++computed;
      first_started.Notify();
      second_computed.WaitForNotificationWithTimeout(absl::Seconds(1));
      return plan;
    });
  });
  first_started.WaitForNotification();
  std::thread b([&] {
    second = cache.FindOrCompute("job", [&]() -> JobShardPlanCache::PlanOrError {
      ++computed;
      second_computed.Notify();
      return PlanOfDocs(1, 1);
    });
  });
  a.join();
  b.join();
  EXPECT_EQ(computed.load(), 1);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, plan);
  EXPECT_EQ(*second, plan);
  EXPECT_EQ(cache.Find("job"), plan);
}

// A plan that fails reaches the callers that waited for it and is not kept: the next ask
// computes again.
TEST(JobShardPlanCacheTest, AFailedPlanIsNotKept) {
  JobShardPlanCache cache(/*max_bytes=*/int64_t{1} << 30, /*max_plans=*/8);
  int computed = 0;
  auto failing = [&]() -> JobShardPlanCache::PlanOrError {
    ++computed;
    return absl::NotFoundError("no such task data");
  };
  EXPECT_EQ(cache.FindOrCompute("job", failing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cache.FindOrCompute("job", failing).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(computed, 2);
  EXPECT_EQ(cache.size(), 0u);
}

// The paper's nine-task suite, full sets: what one cached plan of it holds. Its docs must
// fit the replica's budget (256 MiB) several times over, or the cache would never hold it.
TEST(JobShardPlanCacheTest, ThePaperSuitesPlanFitsTheBudget) {
  hgeval::v1::Job job;
  job.set_id("plan-cache-suite");
  auto tasks = tasks::ExpandTaskList("commonsense,lambada_openai");
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  for (const std::string& task : *tasks) job.add_tasks(task);
  // The heap in use before and after, with the plan alive: the estimate is of that order.
  const size_t heap_before = mallinfo2().uordblks;
  auto plan = PlanJobShards(job, testing::SourcePath("data"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const int64_t heap_growth = static_cast<int64_t>(mallinfo2().uordblks - heap_before);
  const int64_t bytes = EstimatedPlanBytes(**plan);
  std::printf("suite plan: %.1f MiB estimated, the heap grew %.1f MiB\n",
              static_cast<double>(bytes) / (1 << 20), static_cast<double>(heap_growth) / (1 << 20));
  EXPECT_GT(bytes, heap_growth / 2);
  EXPECT_LT(bytes, heap_growth * 2);
  EXPECT_GT(bytes, int64_t{10} << 20);  // ~40K docs with their passages
  EXPECT_LT(bytes, int64_t{128} << 20);
}

}  // namespace
}  // namespace hgeval::server
