// hgeval.v1.JobService on top of the JobManager.
#ifndef HGEVAL_SERVER_RPC_JOB_SERVICE_H_
#define HGEVAL_SERVER_RPC_JOB_SERVICE_H_

#include <atomic>
#include <cstdint>

#include "hgeval/v1/jobs.grpc.pb.h"
#include "server/core/auth.h"
#include "server/jobs/job_manager.h"
#include "server/jobs/job_watch_feed.h"
#include "server/jobs/series_manager.h"

namespace hgeval::server {

// Results larger than this many bytes stay out of Job messages (GetJobResults streams
// them): well under the default message limit, whatever else the Job carries.
inline constexpr int64_t kDefaultMaxInlineResultsBytes = 16 << 20;

struct JobServiceLimits {
  int64_t max_inline_results_bytes = kDefaultMaxInlineResultsBytes;
  // A SubmitJob message (names, task list, NIAH stop strings, every field), as
  // --max_request_bytes bounds the model calls.
  int64_t max_request_bytes = 8 << 20;
  // WatchJob streams open at once (each holds up to two updates, shared with the job's
  // other streams; one reader thread per watched job).
  int64_t max_watch_streams = 1024;
  // A ListJobs answer: jobs beyond it are left out and counted in `omitted`.
  int64_t max_listing_bytes = 16 << 20;
};

// WatchJob is a raw callback method: its streams hold no thread, and every stream of a job
// sends the same serialized update (JobWatchFeed); the other methods are synchronous.
class JobServiceImpl final : public hgeval::v1::JobService::WithRawCallbackMethod_WatchJob<
                                 hgeval::v1::JobService::Service> {
 public:
  JobServiceImpl(JobManager* jobs, const BearerAuth* auth, JobServiceLimits limits = {})
      : jobs_(jobs),
        auth_(auth),
        limits_(limits),
        watch_feed_(jobs, [this](hgeval::v1::Job job) { return Outgoing(std::move(job)); }) {}

  grpc::Status SubmitJob(grpc::ServerContext* context, const hgeval::v1::SubmitJobRequest* request,
                         hgeval::v1::SubmitJobResponse* response) override;
  // A hgeval.v1.WatchJobRequest in, hgeval.v1.Job messages out.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* WatchJob(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request) override;
  grpc::Status GetJob(grpc::ServerContext* context, const hgeval::v1::GetJobRequest* request,
                      hgeval::v1::Job* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const hgeval::v1::ListJobsRequest* request,
                        hgeval::v1::ListJobsResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const hgeval::v1::CancelJobRequest* request,
                         hgeval::v1::Job* response) override;
  grpc::Status GetJobResults(grpc::ServerContext* context, const hgeval::v1::GetJobRequest* request,
                             grpc::ServerWriter<hgeval::v1::JobResultsChunk>* writer) override;

  grpc::Status SubmitSeries(grpc::ServerContext* context,
                            const hgeval::v1::SubmitSeriesRequest* request,
                            hgeval::v1::Series* response) override;
  grpc::Status GetSeries(grpc::ServerContext* context, const hgeval::v1::GetSeriesRequest* request,
                         hgeval::v1::Series* response) override;
  grpc::Status ListSeries(grpc::ServerContext* context,
                          const hgeval::v1::ListSeriesRequest* request,
                          hgeval::v1::ListSeriesResponse* response) override;

  void set_ready(bool ready) { ready_ = ready; }
  // The series methods' manager (must outlive this); without one they are UNIMPLEMENTED.
  void set_series(SeriesManager* series) { series_ = series; }

 private:
  class WatchStream;
  grpc::Status Admit(const grpc::ServerContextBase& context) const;
  // Sets results_bytes and leaves the results out when they are larger than the limit.
  hgeval::v1::Job Outgoing(hgeval::v1::Job job) const;

  JobManager* jobs_;
  SeriesManager* series_ = nullptr;
  const BearerAuth* auth_;
  const JobServiceLimits limits_;
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> watch_streams_{0};
  JobWatchFeed watch_feed_;  // last: its readers stop before the rest goes
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_RPC_JOB_SERVICE_H_
