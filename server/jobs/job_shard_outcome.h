// What one shard of a job leaves in the store when it finishes (the shard row's result),
// so that any replica can show the job's finished tasks and the replica finishing the
// last shard can assemble the job's results.
#ifndef HGEVAL_SERVER_JOBS_JOB_SHARD_OUTCOME_H_
#define HGEVAL_SERVER_JOBS_JOB_SHARD_OUTCOME_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "hgeval/v1/jobs.pb.h"
#include "nlohmann/json.hpp"
#include "server/jobs/job_shard_plan.h"

namespace hgeval::server {

struct ShardOutcome {
  ShardKind kind = ShardKind::kWholeTask;
  int task_index = 0;             // the job's task this shard worked on
  hgeval::v1::TaskResult result;  // the shard's entry in Job.results (not a range's)
  nlohmann::json task_report;     // task jobs: the task's TaskReport (tasks/task_report_json)
  std::string results_json;       // NIAH jobs: the sweep's results and grid
  std::string results_csv;
  int64_t requests_total = 0;
  int64_t requests_cached = 0;    // answered from the store
  int64_t requests_computed = 0;  // computed by this shard's claimer(s)
  double store_seconds = 0;       // reading and writing the store (language models)
  double prepare_seconds = 0;     // preparing requests (language models)
};

std::string SerializeShardOutcome(const ShardOutcome& outcome);
// DATA_LOSS when the stored bytes are not an outcome.
absl::StatusOr<ShardOutcome> ParseShardOutcome(const std::string& bytes);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_JOB_SHARD_OUTCOME_H_
