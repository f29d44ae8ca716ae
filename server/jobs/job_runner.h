// Runs one evaluation job's tasks through the tasks library (tasks/harness/evaluator.h) on a
// LanguageModel backed by the result store: stored requests are answered from the store,
// only the missing ones are computed (through the model's scheduler, so job traffic
// batches with client traffic) and written back at once. A job restarted after a crash,
// or a shard taken over from a killed replica, therefore recomputes nothing already
// stored. A job runs as shards (ranges of a task's docs, or whole tasks; one for a NIAH
// sweep) that replicas sharing the store claim (server/jobs/job_manager.h); the last one assembles
// the job's results.
#ifndef HGEVAL_SERVER_JOBS_JOB_RUNNER_H_
#define HGEVAL_SERVER_JOBS_JOB_RUNNER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hgeval/v1/jobs.pb.h"
#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "server/jobs/job_shard_outcome.h"
#include "tasks/niah/sweep.h"

namespace hgeval::server {

struct JobProgress {
  std::string current_task;
  int64_t requests_total = 0;
  int64_t requests_done = 0;
  int64_t requests_cached = 0;
};

struct JobContext {
  LoadedModel* model = nullptr;
  Executor* executor = nullptr;
  std::string data_dir;
  std::function<void(const JobProgress&)> progress;
  std::function<void(const hgeval::v1::TaskResult&)> task_done;
  std::function<bool()> cancelled;
};

// NOT_FOUND naming the first unknown task.
absl::Status ValidateTasks(const std::vector<std::string>& tasks);
// INVALID_ARGUMENT when the tasks do not fit the model: classify tasks (lra_*) need an
// LRA classifier, every other task a language model.
absl::Status ValidateTasksForModel(const std::vector<std::string>& tasks, const LoadedModel& model);
// Shards a job splits into (server/jobs/job_shard_plan.h): ranges of a task's docs, a report
// shard per split task, a whole shard per small task; one for a NIAH sweep.
absl::StatusOr<int> JobShardCount(const hgeval::v1::Job& job, const std::string& data_dir);
// What shard `index` works on: its task's name ("niah" for a sweep).
std::string JobShardName(const hgeval::v1::Job& job, int index, const std::string& data_dir);
// Runs shard `index` of the job.
absl::StatusOr<ShardOutcome> RunJobShard(const hgeval::v1::Job& job, int index,
                                         JobContext& context);
// The job's results JSON (lm-eval layout; a sweep's own layout) from every shard's
// outcome (the whole and report shards' task reports, in task order): the same document
// one process running every task would write.
absl::StatusOr<std::string> AssembleJobResults(const hgeval::v1::Job& job,
                                               const std::vector<ShardOutcome>& shards,
                                               JobContext& context);

// The sweep a NIAH job spec asks for (unset fields: hgeval-niah's defaults); the inverse
// of client::NiahSpecFromOptions. InvalidArgument naming what is wrong with the spec.
absl::StatusOr<niah::NiahOptions> NiahOptionsFromSpec(const hgeval::v1::NiahJobSpec& spec);

// NIAH jobs (server/jobs/niah_job.cc). InvalidArgument naming what is wrong with the spec, or
// when the longest prompt plus its answer exceeds the model's sequence limit.
absl::Status ValidateNiahJob(const hgeval::v1::NiahJobSpec& spec, const LoadedModel& model);

struct NiahJobOutput {
  std::string results_json;  // niah_results.json
  std::string results_csv;   // niah_grid.csv
};
// Runs the sweep on the model directly (prefix reuse needs its states), serialised with
// the scheduler's calls. Each finished cell is written to the result store at once; cells
// already stored (a resumed or repeated sweep) are restored instead of computed.
// Progress counts cells. context.task_done receives one result "niah" with the metrics.
absl::StatusOr<NiahJobOutput> RunNiahJob(const hgeval::v1::Job& job, JobContext& context);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_JOB_RUNNER_H_
