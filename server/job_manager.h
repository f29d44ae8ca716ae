// Jobs: queued, run one at a time per worker, persisted in the result store's jobs table
// (every state change at once, progress at most twice a second), resumed after a
// restart, watched by any number of clients.
#ifndef HGEVAL_SERVER_JOB_MANAGER_H_
#define HGEVAL_SERVER_JOB_MANAGER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hgeval/v1/jobs.pb.h"
#include "server/executor.h"
#include "server/model_registry.h"
#include "server/result_store.h"

namespace hgeval::server {

struct JobManagerOptions {
  std::string data_dir;  // the tasks' datasets (the repository's data/)
  int workers = 1;
};

class JobManager {
 public:
  JobManager(ResultStore* store, ModelRegistry* registry, Executor* executor,
             JobManagerOptions options);
  ~JobManager();

  // Loads unfinished jobs from the store and starts the workers.
  absl::Status Start();
  // Stops the workers; running jobs stay RUNNING in the store (resumed at next start).
  void Stop();

  absl::StatusOr<std::string> Submit(const hgeval::v1::SubmitJobRequest& request);
  absl::StatusOr<hgeval::v1::Job> Get(const std::string& id);
  absl::StatusOr<std::vector<hgeval::v1::Job>> List(int limit);
  absl::StatusOr<hgeval::v1::Job> Cancel(const std::string& id);
  // Calls `send` with the job now and after every change until a final state, `send`
  // returns false or `stop` returns true.
  absl::Status Watch(const std::string& id, const std::function<bool(const hgeval::v1::Job&)>& send,
                     const std::function<bool()>& stop);

 private:
  void Worker();
  void RunOne(const std::string& id);
  void Update(const std::string& id, const std::function<void(hgeval::v1::Job&)>& change,
              bool persist_now);
  absl::Status Persist(const hgeval::v1::Job& job);

  ResultStore* store_;
  ModelRegistry* registry_;
  Executor* executor_;
  const JobManagerOptions options_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, hgeval::v1::Job> jobs_ ABSL_GUARDED_BY(mu_);  // live (unfinished) jobs
  std::map<std::string, int64_t> versions_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> last_persist_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

bool IsFinalJobState(hgeval::v1::JobState state);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOB_MANAGER_H_
