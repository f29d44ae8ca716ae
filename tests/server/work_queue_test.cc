// The schedulers' one queue (server/exec/work_queue.h): first in, first out; a bound on the
// units queued that an empty queue never applies (one oversized call still runs, alone);
// rounds that take works while their cost fits the budget, the first always; and the
// drain at shutdown.
#include "server/exec/work_queue.h"

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace hgeval::server {
namespace {

struct TestWork {
  int id = 0;
  int64_t unit_count = 1;
  int64_t cost_value = 1;
  int64_t units() const { return unit_count; }
  int64_t cost() const { return cost_value; }

  absl::Mutex mu;
  bool done = false;
  absl::Status status;
};

std::shared_ptr<TestWork> Work(int id, int64_t units, int64_t cost) {
  auto work = std::make_shared<TestWork>();
  work->id = id;
  work->unit_count = units;
  work->cost_value = cost;
  return work;
}

std::vector<int> Ids(const std::vector<std::shared_ptr<TestWork>>& works) {
  std::vector<int> ids;
  for (const auto& work : works) ids.push_back(work->id);
  return ids;
}

TEST(WorkQueueTest, AdmitsWithinTheBoundAndAlwaysWhenEmpty) {
  WorkQueue<TestWork> queue(/*max_units=*/10);
  auto oversized = Work(1, 25, 1);
  EXPECT_TRUE(queue.Admits(*oversized));  // empty: runs alone
  queue.Push(oversized);
  EXPECT_EQ(queue.queued_units(), 25);
  EXPECT_FALSE(queue.Admits(*Work(2, 1, 1)));
  queue.TakeAll();
  EXPECT_EQ(queue.queued_units(), 0);
  queue.Push(Work(3, 6, 1));
  EXPECT_TRUE(queue.Admits(*Work(4, 4, 1)));   // 6 + 4 = the bound
  EXPECT_FALSE(queue.Admits(*Work(5, 5, 1)));  // 6 + 5 > the bound
}

TEST(WorkQueueTest, RoundsTakeWorksInOrderWhileTheirCostFitsTheBudget) {
  WorkQueue<TestWork> queue(1000);
  queue.Push(Work(1, 2, 40));
  queue.Push(Work(2, 3, 50));
  queue.Push(Work(3, 4, 20));
  queue.Push(Work(4, 1, 5));
  // 40 + 50 fit 100; 40 + 50 + 20 do not, and the round stops there (no skipping ahead).
  EXPECT_EQ(Ids(queue.TakeRound(100)), std::vector<int>({1, 2}));
  EXPECT_EQ(queue.queued_units(), 5);
  EXPECT_EQ(Ids(queue.TakeRound(100)), std::vector<int>({3, 4}));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.queued_units(), 0);
  EXPECT_TRUE(queue.TakeRound(100).empty());
}

TEST(WorkQueueTest, AWorkCostlierThanTheBudgetRunsInARoundOfItsOwn) {
  WorkQueue<TestWork> queue(1000);
  queue.Push(Work(1, 1, 500));
  queue.Push(Work(2, 1, 10));
  EXPECT_EQ(Ids(queue.TakeRound(100)), std::vector<int>({1}));
  EXPECT_EQ(Ids(queue.TakeRound(100)), std::vector<int>({2}));
}

TEST(WorkQueueTest, TakeAllDrainsEverythingInOrderAndFinishWorkReleasesTheCaller) {
  WorkQueue<TestWork> queue(1000);
  for (int id = 1; id <= 3; ++id) queue.Push(Work(id, 2, 1000));
  std::vector<std::shared_ptr<TestWork>> all = queue.TakeAll();
  EXPECT_EQ(Ids(all), std::vector<int>({1, 2, 3}));
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(queue.queued_units(), 0);
  FinishWork(*all[0], absl::UnavailableError("stopping"));
  absl::MutexLock lock(&all[0]->mu);
  EXPECT_TRUE(all[0]->done);
  EXPECT_EQ(all[0]->status.code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hgeval::server
