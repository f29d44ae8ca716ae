// The plans a replica keeps (PlanJobShards): a plan holds every evaluated doc of its job's
// tasks, so the cache is bounded in bytes (what the plans hold, estimated) as well as in
// count. The oldest plans go first; a plan larger than the whole budget is not kept. A plan
// asked for by several callers at once is computed once (FindOrCompute).
#ifndef HGEVAL_SERVER_JOBS_JOB_SHARD_PLAN_CACHE_H_
#define HGEVAL_SERVER_JOBS_JOB_SHARD_PLAN_CACHE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/jobs/job_shard_plan.h"

namespace hgeval::server {

// What a plan holds in memory, estimated from its docs' JSON (strings, containers and
// their nodes) and its shards' vectors.
int64_t EstimatedPlanBytes(const JobShardPlan& plan);

class JobShardPlanCache {
 public:
  JobShardPlanCache(int64_t max_bytes, size_t max_plans)
      : max_bytes_(max_bytes), max_plans_(max_plans) {}

  using PlanOrError = absl::StatusOr<std::shared_ptr<const JobShardPlan>>;

  // The plan cached under `key`, or null.
  std::shared_ptr<const JobShardPlan> Find(const std::string& key) const;
  // The plan cached under `key`, else what `compute` returns, kept (Insert). While one
  // caller computes a key's plan, the others asking for the same key wait for its result,
  // an error included, instead of loading the same docs again.
  PlanOrError FindOrCompute(const std::string& key, absl::FunctionRef<PlanOrError()> compute);
  // Keeps `plan` (of `bytes`, EstimatedPlanBytes) under `key`, dropping the oldest plans
  // until both bounds hold; a plan over max_bytes alone is not kept.
  void Insert(const std::string& key, std::shared_ptr<const JobShardPlan> plan, int64_t bytes);

  int64_t bytes() const;
  size_t size() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const JobShardPlan> plan;
    int64_t bytes = 0;
  };
  struct Flight;  // a plan being computed, and the callers' wait for it
  std::shared_ptr<const JobShardPlan> FindLocked(const std::string& key) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  const int64_t max_bytes_;
  const size_t max_plans_;
  mutable absl::Mutex mu_;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_JOB_SHARD_PLAN_CACHE_H_
