// Checkpoint series on the server (docs/series.md): one submission names a task set over
// many checkpoints; each checkpoint runs as an ordinary job of the JobManager (so shards,
// leases, restarts and the fleet treat it like any job, and its results are kept under the
// checkpoint's content hash), and the series' record in the result store ties the jobs
// together. A series' id is derived from its name, tasks, limit and options, so submitting
// the same series again (after a client or server died, to re-run it, or with more
// checkpoints) finds the record: the points become the submission's checkpoints, finished
// and live jobs are kept, and a checkpoint with no job, or whose job ended without
// results, gets a new one (answered from the store as far as it was computed).
#ifndef HGEVAL_SERVER_JOBS_SERIES_MANAGER_H_
#define HGEVAL_SERVER_JOBS_SERIES_MANAGER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "hgeval/v1/jobs.pb.h"
#include "server/jobs/job_manager.h"
#include "server/store/result_store.h"

namespace hgeval::server {

struct SeriesLimits {
  int64_t max_checkpoints = 1024;  // checkpoints in one series (--max_series_checkpoints)
  int64_t max_name_bytes = 256;
};

class SeriesManager {
 public:
  SeriesManager(ResultStore* store, JobManager* jobs, SeriesLimits limits = {})
      : store_(store), jobs_(jobs), limits_(limits) {}

  // Checks the whole submission, then submits the jobs it still needs; the series with its
  // points' job ids (GetSeries fills their states).
  absl::StatusOr<hgeval::v1::Series> Submit(const hgeval::v1::SubmitSeriesRequest& request);
  // The series with each point's job state, progress, metrics and error.
  absl::StatusOr<hgeval::v1::Series> Get(const std::string& id);
  // Newest first, as recorded (points without states).
  absl::StatusOr<std::vector<hgeval::v1::Series>> List(int limit);

 private:
  absl::StatusOr<std::optional<hgeval::v1::Series>> Read(const std::string& id);

  ResultStore* const store_;
  JobManager* const jobs_;
  const SeriesLimits limits_;
  absl::Mutex submit_mu_;  // one submission at a time reads and rewrites a record
};

// A submission's series id: "series-" and 16 hex digits of the SHA-256 of its name,
// tasks, limit and options.
std::string SeriesIdOf(const hgeval::v1::SubmitSeriesRequest& request);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_SERIES_MANAGER_H_
