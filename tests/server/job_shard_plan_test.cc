// The splitter of jobs into shards (server/job_shard_plan.h): ranges cover each task's
// docs exactly once, cut on doc boundaries, about the target cost; small tasks stay whole;
// report shards come last and wait for exactly their task's ranges.
#include "server/job_shard_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace hgeval::server {
namespace {

std::vector<int64_t> Docs(int n, int64_t requests_each) {
  return std::vector<int64_t>(static_cast<size_t>(n), requests_each);
}

TEST(JobShardPlanTest, RangesCoverEveryDocOnceOnDocBoundaries) {
  // 1000 docs of 4 requests (hellaswag-like), 300 docs of 2, 10 docs of 1.
  const std::vector<std::vector<int64_t>> tasks = {Docs(1000, 4), Docs(300, 2), Docs(10, 1)};
  const std::vector<ShardSpan> shards = SplitTasksIntoShards(tasks, 500);
  for (size_t t = 0; t < tasks.size(); ++t) {
    std::vector<int> covered(tasks[t].size(), 0);
    int64_t requests = 0;
    for (const ShardSpan& span : shards) {
      if (span.task != static_cast<int>(t) || span.kind == ShardKind::kReport) continue;
      ASSERT_LT(span.doc_begin, span.doc_end);
      int64_t span_requests = 0;
      for (int64_t d = span.doc_begin; d < span.doc_end; ++d) {
        ++covered[static_cast<size_t>(d)];
        span_requests += tasks[t][static_cast<size_t>(d)];
      }
      EXPECT_EQ(span.requests, span_requests);
      requests += span_requests;
    }
    for (int c : covered) EXPECT_EQ(c, 1) << "task " << t;
    int64_t expected = 0;
    for (int64_t r : tasks[t]) expected += r;
    EXPECT_EQ(requests, expected);
  }
  // 4000 requests at 500 a shard: 8 ranges of 500; 600 requests: 1 whole shard (round(1.2));
  // 10: whole.
  int ranges = 0, whole = 0, reports = 0;
  for (const ShardSpan& span : shards) {
    if (span.kind == ShardKind::kDocRange) {
      ++ranges;
      EXPECT_EQ(span.task, 0);
      EXPECT_EQ(span.requests, 500);
    }
    whole += span.kind == ShardKind::kWholeTask;
    reports += span.kind == ShardKind::kReport;
  }
  EXPECT_EQ(ranges, 8);
  EXPECT_EQ(whole, 2);
  EXPECT_EQ(reports, 1);
}

TEST(JobShardPlanTest, WorkShardsByFallingCostThenReportsWaitingForTheirRanges) {
  const std::vector<std::vector<int64_t>> tasks = {Docs(10, 1), Docs(400, 2), Docs(90, 3)};
  const std::vector<ShardSpan> shards = SplitTasksIntoShards(tasks, 100);
  size_t first_report = shards.size();
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].kind == ShardKind::kReport) {
      first_report = std::min(first_report, i);
      std::vector<int> expected;
      for (size_t j = 0; j < first_report; ++j) {
        if (shards[j].task == shards[i].task) {
          EXPECT_EQ(shards[j].kind, ShardKind::kDocRange);
          expected.push_back(static_cast<int>(j));
        }
      }
      EXPECT_EQ(shards[i].waits_for, expected);
      EXPECT_GE(expected.size(), 2u);
    } else {
      EXPECT_EQ(first_report, shards.size()) << "a work shard after a report shard";
      if (i > 0) EXPECT_LE(shards[i].requests, shards[i - 1].requests);
    }
  }
  // Tasks 1 (800 requests: 8 ranges) and 2 (270: 3 ranges) split; task 0 (10) whole, last.
  EXPECT_EQ(shards.size(), 1u + 8u + 3u + 2u);
  EXPECT_EQ(shards[first_report - 1].task, 0);
  EXPECT_EQ(shards[first_report].task, 1);
  EXPECT_EQ(shards[first_report + 1].task, 2);
}

TEST(JobShardPlanTest, UnevenDocsStayWholeAndNoRangeIsEmpty) {
  // One huge doc among small ones, and a task with fewer docs than its cost asks ranges.
  const std::vector<std::vector<int64_t>> tasks = {{1, 1, 500, 1, 1, 1}, {300, 300}};
  const std::vector<ShardSpan> shards = SplitTasksIntoShards(tasks, 50);
  for (const ShardSpan& span : shards) {
    if (span.kind != ShardKind::kReport) EXPECT_LT(span.doc_begin, span.doc_end);
  }
  int task1_ranges = 0;
  for (const ShardSpan& span : shards)
    task1_ranges += span.task == 1 && span.kind == ShardKind::kDocRange;
  EXPECT_EQ(task1_ranges, 2);  // at most one range per doc
}

TEST(JobShardPlanTest, TargetIsAboutOneSixtyFourthOfTheJobWithAFloor) {
  EXPECT_EQ(ShardTargetRequests(100), kMinShardRequests);
  EXPECT_EQ(ShardTargetRequests(64 * 1000), 1000);
  EXPECT_EQ(ShardTargetRequests(64 * 1000 + 1), 1001);
}

}  // namespace
}  // namespace hgeval::server
