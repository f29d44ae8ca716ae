// How a job splits into shards: a task's requests are cut into contiguous ranges of
// documents of about one target cost (so that N servers claiming shards oldest first
// finish together, the small shards last), plus one report shard per split task that
// runs the whole task once every range is stored (answering everything from the store,
// so the numbers equal one server's). A task no bigger than the target stays one shard.
// Cuts fall on document boundaries: a document's requests (and so the requests that
// prefix-reuse scoring groups by shared context) are never split between shards. Docs that
// share a request (the same text, so the same store key) go to one range, so that two
// servers never compute it at once.
#ifndef HGEVAL_SERVER_JOBS_JOB_SHARD_PLAN_H_
#define HGEVAL_SERVER_JOBS_JOB_SHARD_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hgeval/v1/jobs.pb.h"
#include "tasks/api/task.h"

namespace hgeval::server {

enum class ShardKind {
  kWholeTask,  // runs the task (a NIAH sweep) to its report
  kDocRange,   // computes and stores the requests of its docs
  kReport,     // runs the task to its report once its kDocRange shards are done
};

struct ShardSpan {
  ShardKind kind = ShardKind::kWholeTask;
  int task = 0;                // index into the job's tasks (0 for a NIAH sweep)
  std::vector<int64_t> docs;   // kDocRange: the task's docs it evaluates, ascending
  int64_t requests = 0;        // the requests of its docs (a report shard's: 0)
  std::vector<int> waits_for;  // kReport: the shard indices of the task's ranges
};

// The shards, in claim order: the tasks' ranges and whole tasks by falling cost (the
// smallest last, where they even out the servers' finishing times), then the report
// shards in task order. requests_per_doc[t][d]: the number of task t's requests of doc d.
// A task becomes round(cost / target_requests) ranges (at least 1; one range is a whole
// task), each range about cost / ranges.
std::vector<ShardSpan> SplitTasksIntoShards(
    const std::vector<std::vector<int64_t>>& requests_per_doc, int64_t target_requests);

// The same split, with each doc's request keys (keys[t][d]: one per request of task t's
// doc d; equal keys are equal requests): docs that share a key, directly or through other
// docs, are moved into the range of the first of them, so each key is computed by one
// shard. Ranges keep their order; one emptied by the moves is dropped.
std::vector<ShardSpan> SplitTasksIntoShards(
    const std::vector<std::vector<std::vector<uint64_t>>>& keys, int64_t target_requests);

// A request's key for SplitTasksIntoShards: a 64-bit FNV-1a hash of everything that makes
// it a different request. Stable across builds and machines: every replica plans alike.
uint64_t RequestKey(const tasks::Request& request);

// The target cost of one shard for a job of `total_requests` (unless the job's
// options.shard_requests sets it): about 1/64th of the job, at least kMinShardRequests,
// so that 8 servers get 8 shards each.
inline constexpr int64_t kMinShardRequests = 32;
inline constexpr int64_t kShardsPerJob = 64;
int64_t ShardTargetRequests(int64_t total_requests);

struct JobShardPlan {
  std::vector<ShardSpan> shards;
  // Each task's evaluated docs (after the job's limit), loaded once for its ranges.
  std::vector<std::vector<tasks::Doc>> docs;
};

// The job's plan (a NIAH sweep: one whole shard): loads every task's docs from
// `data_dir` and counts their requests. Every replica computes the same plan for the
// same job and data. Cached per job (a few plans within a byte budget:
// job_shard_plan_cache.h), so a replica loads the docs once.
absl::StatusOr<std::shared_ptr<const JobShardPlan>> PlanJobShards(const hgeval::v1::Job& job,
                                                                  const std::string& data_dir);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_JOB_SHARD_PLAN_H_
