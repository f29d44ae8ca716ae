// Jobs over the result store: a submitted job is a row in the jobs table plus its shard
// rows (ranges of a task's docs and report shards: server/jobs/job_shard_plan.h). Every server
// sharing the store (one with SQLite, a fleet with PostgreSQL) runs workers that claim shards with
// a lease, renew it while they work (recording progress) and store each shard's outcome; the server
// finishing a job's last shard writes the job's results. A server that dies stops renewing, and
// once its lease runs out another claims the shard (recomputing nothing already stored); a server
// restarted under the same --replica name takes its shards back at once. Jobs are read,
// watched and cancelled through any server.
#ifndef HGEVAL_SERVER_JOBS_JOB_MANAGER_H_
#define HGEVAL_SERVER_JOBS_JOB_MANAGER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "hgeval/v1/jobs.pb.h"
#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "server/store/result_store.h"

namespace hgeval::server {

struct JobManagerOptions {
  std::string data_dir;  // the tasks' datasets (the repository's data/)
  int workers = 1;       // shards this server runs at once
  // This server's name in shard claims; unique among the servers sharing a store and
  // stable across its restarts (hgeval-server: host:port).
  std::string replica = "local";
  // How long a claim outlives its claimer's last renewal (renewed every third of it).
  absl::Duration lease = absl::Seconds(30);
  // How often idle workers look in the store for shards that other servers queued.
  absl::Duration poll = absl::Milliseconds(500);
};

class JobManager {
 public:
  JobManager(ResultStore* store, ModelRegistry* registry, Executor* executor,
             JobManagerOptions options);
  ~JobManager();

  // This server's name in shard claims (before Start; default options.replica).
  void set_replica(const std::string& name) { options_.replica = name; }
  // Takes back the shards this replica held before a restart, gives jobs stored before
  // shards existed their shards, and starts the workers.
  absl::Status Start();
  // Stops the workers and puts the shards they held back in the queue (another server, or
  // this one at its next start, resumes them).
  void Stop();

  // A new job's id, or that of a job submitted here with the same spec on the same model
  // weights that is still queued or running (they would compute the same requests). A new
  // id is `id_prefix`, '-' and 16 random hex digits: jobs created in the same second run
  // in the order of their ids (a series names its jobs so that they run in its order).
  absl::StatusOr<std::string> Submit(const hgeval::v1::SubmitJobRequest& request,
                                     const std::string& id_prefix = "job");
  // Submit's checks (the model loaded, its tasks known and supported) without a job.
  absl::Status Validate(const hgeval::v1::SubmitJobRequest& request);
  absl::StatusOr<hgeval::v1::Job> Get(const std::string& id);
  absl::StatusOr<std::vector<hgeval::v1::Job>> List(int limit);
  absl::StatusOr<hgeval::v1::Job> Cancel(const std::string& id);
  // Calls `send` with the job now and after every change (seen in the store, so changes
  // made by other servers too) until a final state, `send` returns false or `stop` returns
  // true. The job is handed over (moved): a watcher keeps no copy of its own.
  absl::Status Watch(const std::string& id, const std::function<bool(hgeval::v1::Job)>& send,
                     const std::function<bool()>& stop);

 private:
  // The request's model once every check of Submit has passed.
  absl::StatusOr<LoadedModel*> Validated(const hgeval::v1::SubmitJobRequest& request);
  void Worker();
  // Runs a claimed shard to its end: finished (the job's results written when it was the
  // last), failed (the job fails), or left (the job was cancelled or failed elsewhere, the
  // lease was lost, or this server is stopping).
  void RunShard(const ClaimedShard& claimed);
  // The job as stored, with the progress and finished tasks of its shards.
  absl::StatusOr<hgeval::v1::Job> View(const StoredJob& row);
  // Ends an unfinished job as `state` (cancelled, failed) with its progress so far;
  // FAILED_PRECONDITION when it had already ended.
  absl::Status EndBeforeFinishing(const std::string& id, hgeval::v1::JobState state,
                                  const std::string& error);
  bool stopping();
  // Wakes watchers (something changed in the store).
  void Changed();

  ResultStore* store_;
  ModelRegistry* registry_;
  Executor* executor_;
  JobManagerOptions options_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t version_ ABSL_GUARDED_BY(mu_) = 0;      // local changes, for watchers
  int64_t submissions_ ABSL_GUARDED_BY(mu_) = 0;  // local submits, for idle workers
  std::vector<std::thread> workers_;
  // Jobs submitted here and not seen finished, by their spec (the request and the model's
  // content hash): an identical submission attaches to the live job instead of computing
  // the same requests again (issue 29 item 8). Submit holds submit_mu_ from this lookup
  // to the job's creation.
  absl::Mutex submit_mu_;
  absl::flat_hash_map<std::string, std::string> live_by_spec_ ABSL_GUARDED_BY(submit_mu_);
};

bool IsFinalJobState(hgeval::v1::JobState state);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_JOB_MANAGER_H_
