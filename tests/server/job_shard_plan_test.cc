// The splitter of jobs into shards (server/jobs/job_shard_plan.h): ranges cover each task's
// docs exactly once, cut on doc boundaries, about the target cost; small tasks stay whole;
// report shards come last and wait for exactly their task's ranges; docs that share a
// request share a range, on made-up keys and on the paper's nine-task suite.
#include "server/jobs/job_shard_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "hgeval/v1/jobs.pb.h"
#include "tasks/api/registry.h"
#include "tests/support/paths.h"

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
      if (span.kind == ShardKind::kWholeTask) {
        ASSERT_TRUE(span.docs.empty());
        for (size_t d = 0; d < tasks[t].size(); ++d) ++covered[d];
        requests += span.requests;
        continue;
      }
      ASSERT_FALSE(span.docs.empty());
      // Contiguous: no keys, so the cut alone decides.
      EXPECT_EQ(span.docs.back() - span.docs.front() + 1, static_cast<int64_t>(span.docs.size()));
      int64_t span_requests = 0;
      for (int64_t d : span.docs) {
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
    if (span.kind == ShardKind::kDocRange) EXPECT_FALSE(span.docs.empty());
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

// keys[t][d]: distinct keys per request unless a test shares one on purpose.
std::vector<std::vector<uint64_t>> DistinctKeys(int docs, int requests_each, uint64_t base) {
  std::vector<std::vector<uint64_t>> keys(static_cast<size_t>(docs));
  for (int d = 0; d < docs; ++d) {
    for (int r = 0; r < requests_each; ++r) {
      keys[static_cast<size_t>(d)].push_back(base + static_cast<uint64_t>(d * requests_each + r));
    }
  }
  return keys;
}

// The range shard holding each doc of task 0.
std::map<int64_t, size_t> RangeOfDoc(const std::vector<ShardSpan>& shards) {
  std::map<int64_t, size_t> range;
  for (size_t i = 0; i < shards.size(); ++i) {
    if (shards[i].kind != ShardKind::kDocRange || shards[i].task != 0) continue;
    for (int64_t d : shards[i].docs) EXPECT_TRUE(range.emplace(d, i).second) << "doc " << d;
  }
  return range;
}

TEST(JobShardPlanTest, DocsSharingARequestGoToTheRangeOfTheFirst) {
  // 100 docs of 2 requests, target 20: 10 ranges of 10 docs. Doc 95 repeats a request of
  // doc 3; doc 50 repeats one of doc 95 (so joins doc 3's range too); doc 12 repeats one of
  // doc 11 (same range already).
  std::vector<std::vector<std::vector<uint64_t>>> keys = {DistinctKeys(100, 2, 0)};
  keys[0][95][1] = keys[0][3][0];
  keys[0][50][0] = keys[0][95][0];
  keys[0][12][1] = keys[0][11][1];
  const std::vector<ShardSpan> shards = SplitTasksIntoShards(keys, 20);
  std::map<int64_t, size_t> range = RangeOfDoc(shards);
  ASSERT_EQ(range.size(), 100u);
  EXPECT_EQ(range[95], range[3]);
  EXPECT_EQ(range[50], range[3]);
  EXPECT_EQ(range[12], range[11]);
  EXPECT_NE(range[51], range[3]);  // the rest of 50's range stays
  EXPECT_EQ(range[51], range[52]);
  // The first range grew by two docs (4 requests), each later one lost one.
  EXPECT_EQ(shards[0].requests, 24);
  EXPECT_EQ(shards[0].docs, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 50, 95}));
  for (const ShardSpan& span : shards) {
    if (span.kind == ShardKind::kDocRange) {
      EXPECT_EQ(span.requests, 2 * static_cast<int64_t>(span.docs.size()));
      EXPECT_TRUE(std::is_sorted(span.docs.begin(), span.docs.end()));
    }
  }
}

TEST(JobShardPlanTest, ARangeEmptiedByTheMovesIsDroppedAndOneLeftMeansWhole) {
  // Docs 2 and 3 (range 2 of 2) repeat docs 0 and 1: one range holds everything, so the
  // task runs whole with no report shard.
  std::vector<std::vector<std::vector<uint64_t>>> keys = {{{1}, {2}, {1}, {2}}};
  std::vector<ShardSpan> shards = SplitTasksIntoShards(keys, 2);
  ASSERT_EQ(shards.size(), 1u);
  EXPECT_EQ(shards[0].kind, ShardKind::kWholeTask);
  EXPECT_EQ(shards[0].requests, 4);
  // Three ranges, the last emptied: two ranges and their report shard remain.
  keys = {{{1}, {2}, {3}, {4}, {1}, {4}}};
  shards = SplitTasksIntoShards(keys, 2);
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].docs, (std::vector<int64_t>{0, 1, 4}));
  EXPECT_EQ(shards[1].docs, (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(shards[2].kind, ShardKind::kReport);
  EXPECT_EQ(shards[2].waits_for, (std::vector<int>{0, 1}));
}

TEST(JobShardPlanTest, RequestKeyTellsApartEveryField) {
  tasks::Request base;
  base.context = "The cat";
  base.continuation = " sat";
  const uint64_t key = RequestKey(base);
  EXPECT_EQ(RequestKey(base), key);
  std::vector<tasks::Request> changed(8, base);
  changed[0].type = tasks::RequestType::kGenerateUntil;
  changed[1].context = "The ca";
  changed[1].continuation = "t sat";  // same bytes in total
  changed[2].until = {"\n"};
  changed[3].max_gen_toks = 12;
  changed[4].windowless = true;
  changed[5].tokens = {1};
  changed[6].targets = {-1};
  changed[7].documents = {{"text", {}, 0}};
  std::set<uint64_t> keys = {key};
  for (const tasks::Request& request : changed) keys.insert(RequestKey(request));
  EXPECT_EQ(keys.size(), changed.size() + 1);
}

// The paper's suite, full sets, as a job plans it: no request key is in two shards of a
// task, every doc is in one shard, and the counts add up to the task's requests.
TEST(JobShardPlanTest, ThePaperSuiteNeverPutsARequestInTwoShards) {
  hgeval::v1::Job job;
  job.set_id("plan-suite");
  for (const char* task : {"piqa", "arc_easy", "arc_challenge", "hellaswag", "winogrande",
                           "openbookqa", "boolq", "social_iqa", "lambada_openai"}) {
    job.add_tasks(task);
  }
  auto plan = PlanJobShards(job, testing::SourcePath("data"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::map<uint64_t, std::set<int>> shards_of_key;
  std::map<uint64_t, std::set<int>> tasks_of_key;
  int64_t total = 0, ranges = 0;
  for (size_t i = 0; i < (*plan)->shards.size(); ++i) {
    const ShardSpan& span = (*plan)->shards[i];
    if (span.kind == ShardKind::kReport) continue;
    ranges += span.kind == ShardKind::kDocRange;
    auto task = tasks::CreateTask(job.tasks(span.task));
    ASSERT_TRUE(task.ok());
    const auto& docs = (*plan)->docs[static_cast<size_t>(span.task)];
    std::vector<int64_t> indices = span.docs;
    if (span.kind == ShardKind::kWholeTask) {
      for (size_t d = 0; d < docs.size(); ++d) indices.push_back(static_cast<int64_t>(d));
    }
    int64_t requests = 0;
    for (int64_t d : indices) {
      auto doc_requests = (*task)->Requests(docs[static_cast<size_t>(d)]);
      ASSERT_TRUE(doc_requests.ok());
      requests += static_cast<int64_t>(doc_requests->size());
      for (const tasks::Request& request : *doc_requests) {
        shards_of_key[RequestKey(request)].insert(static_cast<int>(i));
        tasks_of_key[RequestKey(request)].insert(span.task);
      }
    }
    EXPECT_EQ(span.requests, requests);
    total += requests;
  }
  EXPECT_EQ(total, 80121);  // the nine full sets: 80,014 distinct requests
  EXPECT_GE(ranges, 50);
  int64_t in_two_shards = 0, across_tasks = 0;
  for (const auto& [key, shards] : shards_of_key) {
    in_two_shards += tasks_of_key[key].size() == 1 && shards.size() > 1;
    across_tasks += tasks_of_key[key].size() > 1;
  }
  EXPECT_EQ(shards_of_key.size(), 80014u);
  EXPECT_EQ(in_two_shards, 0);
  // Different tasks' requests differ (each task writes its own prompts), so one shard per
  // key within each task is one per key in the job.
  EXPECT_EQ(across_tasks, 0);
  std::printf("suite: %lld requests, %zu distinct, %lld ranges\n", static_cast<long long>(total),
              shards_of_key.size(), static_cast<long long>(ranges));
}

// A job's own shard size has the same floor as the default: piqa's first 100 docs (200
// requests) at shard_requests 1 make round(200 / 32) = 6 ranges, not 100 one-doc shards.
TEST(JobShardPlanTest, AJobsShardSizeIsFlooredAtTheMinimum) {
  hgeval::v1::Job job;
  job.set_id("plan-floor");
  job.add_tasks("piqa");
  job.set_limit(100);
  job.mutable_options()->set_shard_requests(1);
  auto plan = PlanJobShards(job, testing::SourcePath("data"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  int ranges = 0;
  for (const ShardSpan& span : (*plan)->shards) ranges += span.kind == ShardKind::kDocRange;
  EXPECT_EQ(ranges, 6);
}

}  // namespace
}  // namespace hgeval::server
