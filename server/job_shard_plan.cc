#include "server/job_shard_plan.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tasks/evaluator.h"
#include "tasks/registry.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

std::vector<ShardSpan> SplitTasksIntoShards(
    const std::vector<std::vector<int64_t>>& requests_per_doc, int64_t target_requests) {
  target_requests = std::max<int64_t>(1, target_requests);
  std::vector<ShardSpan> work;
  std::vector<int> split_tasks;
  for (size_t t = 0; t < requests_per_doc.size(); ++t) {
    const std::vector<int64_t>& per_doc = requests_per_doc[t];
    const int64_t docs = static_cast<int64_t>(per_doc.size());
    const int64_t cost = std::accumulate(per_doc.begin(), per_doc.end(), int64_t{0});
    const int64_t ranges = std::clamp<int64_t>(
        std::llround(static_cast<double>(cost) / static_cast<double>(target_requests)), 1,
        std::max<int64_t>(1, docs));
    if (ranges == 1) {
      work.push_back({ShardKind::kWholeTask, static_cast<int>(t), 0, docs, cost, {}});
      continue;
    }
    split_tasks.push_back(static_cast<int>(t));
    // Range r ends at the first doc boundary where the running cost reaches r/ranges of
    // the task's, leaving at least one doc for each later range.
    int64_t begin = 0, cumulative = 0, range_cost = 0;
    for (int64_t r = 1; r <= ranges; ++r) {
      const int64_t goal = cost * r / ranges;
      int64_t end = begin;
      range_cost = 0;
      while (end < docs - (ranges - r) && (end == begin || cumulative < goal || r == ranges)) {
        cumulative += per_doc[end];
        range_cost += per_doc[end];
        ++end;
      }
      work.push_back({ShardKind::kDocRange, static_cast<int>(t), begin, end, range_cost, {}});
      begin = end;
    }
  }
  std::stable_sort(work.begin(), work.end(),
                   [](const ShardSpan& a, const ShardSpan& b) { return a.requests > b.requests; });
  for (int t : split_tasks) {
    ShardSpan report{ShardKind::kReport, t, 0, 0, 0, {}};
    for (size_t i = 0; i < work.size(); ++i) {
      if (work[i].task == t) report.waits_for.push_back(static_cast<int>(i));
    }
    report.doc_end = requests_per_doc[static_cast<size_t>(t)].size();
    work.push_back(std::move(report));
  }
  return work;
}

int64_t ShardTargetRequests(int64_t total_requests) {
  return std::max(kMinShardRequests, (total_requests + kShardsPerJob - 1) / kShardsPerJob);
}

namespace {

absl::StatusOr<std::shared_ptr<const JobShardPlan>> ComputePlan(const v1::Job& job,
                                                                const std::string& data_dir) {
  auto plan = std::make_shared<JobShardPlan>();
  if (job.has_niah() || job.tasks_size() == 0) {
    plan->shards.push_back({ShardKind::kWholeTask, 0, 0, 0, 0, {}});
    plan->docs.resize(1);
    return plan;
  }
  std::vector<std::vector<int64_t>> requests_per_doc;
  int64_t total = 0;
  for (const std::string& name : job.tasks()) {
    absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
    if (!task.ok()) return task.status();
    absl::StatusOr<std::vector<tasks::Doc>> docs = (*task)->LoadDocs(data_dir);
    if (!docs.ok()) return docs.status();
    docs->resize(static_cast<size_t>(
        tasks::EffectiveDocCount(static_cast<int64_t>(docs->size()), job.limit())));
    std::vector<int64_t>& counts = requests_per_doc.emplace_back();
    for (const tasks::Doc& doc : *docs) {
      absl::StatusOr<std::vector<tasks::Request>> requests = (*task)->Requests(doc);
      if (!requests.ok()) return requests.status();
      counts.push_back(static_cast<int64_t>(requests->size()));
      total += counts.back();
    }
    plan->docs.push_back(*std::move(docs));
  }
  plan->shards = SplitTasksIntoShards(requests_per_doc, ShardTargetRequests(total));
  return plan;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const JobShardPlan>> PlanJobShards(const v1::Job& job,
                                                                  const std::string& data_dir) {
  // A few recent plans: the jobs a replica is working on.
  constexpr size_t kCachedPlans = 8;
  static absl::Mutex mu(absl::kConstInit);
  static auto* cache =
      new std::deque<std::pair<std::string, std::shared_ptr<const JobShardPlan>>>();
  const std::string key = absl::StrCat(job.id(), "\n", data_dir);
  {
    absl::MutexLock lock(&mu);
    for (const auto& [cached_key, plan] : *cache) {
      if (cached_key == key) return plan;
    }
  }
  absl::StatusOr<std::shared_ptr<const JobShardPlan>> plan = ComputePlan(job, data_dir);
  if (!plan.ok()) return plan.status();
  absl::MutexLock lock(&mu);
  cache->emplace_back(key, *plan);
  if (cache->size() > kCachedPlans) cache->pop_front();
  return plan;
}

}  // namespace hgeval::server
