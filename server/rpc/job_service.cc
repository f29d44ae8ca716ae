#include "server/rpc/job_service.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/core/request_prep.h"
#include "server/rpc/model_service.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

grpc::Status JobServiceImpl::Admit(const grpc::ServerContextBase& context) const {
  if (grpc::Status s = auth_->Check(context); !s.ok()) return s;
  if (!ready_) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the server is not serving (starting or stopping)");
  }
  return grpc::Status::OK;
}

namespace {

// Names arrive as bytes (a proto3 string with invalid UTF-8 would fail to parse and reach
// the client as an unexplained INTERNAL): checked here, named in the message.
grpc::Status CheckUtf8(const std::string& value, const std::string& what) {
  return ToGrpcStatus(ValidateUtf8(value, what));
}

grpc::Status CheckSubmitNames(const v1::SubmitJobRequest& request) {
  if (grpc::Status s = CheckUtf8(request.model(), "model"); !s.ok()) return s;
  for (int i = 0; i < request.tasks_size(); ++i) {
    if (grpc::Status s = CheckUtf8(request.tasks(i), absl::StrCat("tasks[", i, "]")); !s.ok()) {
      return s;
    }
  }
  for (const auto& [value, what] : {std::pair{&request.niah().mode(), "niah.mode"},
                                    std::pair{&request.niah().preset(), "niah.preset"},
                                    std::pair{&request.niah().scorer(), "niah.scorer"}}) {
    if (grpc::Status s = CheckUtf8(*value, what); !s.ok()) return s;
  }
  return grpc::Status::OK;
}

}  // namespace

v1::Job JobServiceImpl::Outgoing(v1::Job job) const {
  const int64_t bytes = static_cast<int64_t>(job.results_json().size() + job.results_csv().size());
  job.set_results_bytes(bytes);
  if (bytes > limits_.max_inline_results_bytes) {
    job.clear_results_json();
    job.clear_results_csv();
  }
  return job;
}

grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext* context,
                                       const v1::SubmitJobRequest* request,
                                       v1::SubmitJobResponse* response) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (grpc::Status s = ToGrpcStatus(CheckRequestSize(*request, limits_.max_request_bytes));
      !s.ok()) {
    return s;
  }
  if (grpc::Status s = CheckSubmitNames(*request); !s.ok()) return s;
  absl::StatusOr<std::string> id = jobs_->Submit(*request);
  if (!id.ok()) return ToGrpcStatus(id.status());
  response->set_job_id(*id);
  return grpc::Status::OK;
}

// One WatchJob call. It counts itself among the open streams until gRPC is done with it.
// At most two updates are held: the one being written and the newest one waiting.
class JobServiceImpl::WatchStream final : public grpc::ServerWriteReactor<grpc::ByteBuffer>,
                                          public JobWatcher {
 public:
  explicit WatchStream(JobServiceImpl* service) : service_(service) { ++service_->watch_streams_; }

  // Ends the call at once (refused before it was subscribed).
  void Refuse(const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    FinishLocked(status);
  }
  void Watch(const std::string& id) {
    id_ = id;
    subscribed_ = true;
    service_->watch_feed_.Subscribe(id, this);
  }

  void Offer(std::shared_ptr<const grpc::ByteBuffer> update) override {
    absl::MutexLock lock(&mu_);
    if (finished_ || ending_) return;
    if (writing_ != nullptr) {
      waiting_ = std::move(update);  // replaces an older one: a slow client skips versions
      return;
    }
    writing_ = std::move(update);
    StartWrite(writing_.get());
  }
  void End(const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    if (finished_ || ending_) return;
    ending_ = true;
    end_status_ = ToGrpcStatus(status);
    if (writing_ == nullptr) FinishLocked(end_status_);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = nullptr;
    if (finished_) return;
    if (!ok) {
      waiting_ = nullptr;
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
    } else if (waiting_ != nullptr) {
      writing_ = std::move(waiting_);
      StartWrite(writing_.get());
    } else if (ending_) {
      FinishLocked(end_status_);
    }
  }
  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    waiting_ = nullptr;
    // A write in flight fails now, and OnWriteDone finishes the call.
    if (writing_ == nullptr) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled by the client"));
    }
  }
  void OnDone() override {
    if (subscribed_) service_->watch_feed_.Unsubscribe(id_, this);
    --service_->watch_streams_;
    delete this;
  }

 private:
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return;
    finished_ = true;
    Finish(status);
  }

  JobServiceImpl* const service_;
  std::string id_;
  bool subscribed_ = false;
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool ending_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status end_status_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const grpc::ByteBuffer> writing_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const grpc::ByteBuffer> waiting_ ABSL_GUARDED_BY(mu_);
};

grpc::ServerWriteReactor<grpc::ByteBuffer>* JobServiceImpl::WatchJob(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  auto* stream = new WatchStream(this);
  if (grpc::Status s = Admit(*context); !s.ok()) {
    stream->Refuse(s);
    return stream;
  }
  v1::WatchJobRequest parsed;
  {
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (request->Dump(&slices).ok()) {
      for (const grpc::Slice& slice : slices) {
        bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
      }
    }
    if (!parsed.ParseFromString(bytes)) {
      stream->Refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                  "the request is not a hgeval.v1.WatchJobRequest"));
      return stream;
    }
  }
  if (grpc::Status s = CheckUtf8(parsed.job_id(), "job_id"); !s.ok()) {
    stream->Refuse(s);
    return stream;
  }
  // Each open stream holds its newest update until the client reads it.
  if (watch_streams_ > limits_.max_watch_streams) {
    stream->Refuse(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("this server already serves ", limits_.max_watch_streams,
                     " WatchJob streams (--max_watch_streams); poll with GetJob or retry later")));
    return stream;
  }
  stream->Watch(parsed.job_id());
  return stream;
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                                    v1::Job* response) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (grpc::Status s = CheckUtf8(request->job_id(), "job_id"); !s.ok()) return s;
  absl::StatusOr<v1::Job> job = jobs_->Get(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response = Outgoing(*std::move(job));
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetJobResults(grpc::ServerContext* context,
                                           const v1::GetJobRequest* request,
                                           grpc::ServerWriter<v1::JobResultsChunk>* writer) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (grpc::Status s = CheckUtf8(request->job_id(), "job_id"); !s.ok()) return s;
  absl::StatusOr<v1::Job> job = jobs_->Get(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  if (job->state() != v1::JOB_STATE_SUCCEEDED && job->state() != v1::JOB_STATE_FAILED &&
      job->state() != v1::JOB_STATE_CANCELLED) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("job ", request->job_id(), " has not finished"));
  }
  constexpr size_t kChunk = 4 << 20;
  const std::string& json = job->results_json();
  const std::string& csv = job->results_csv();
  for (size_t at = 0; at < json.size() + csv.size(); at += kChunk) {
    if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    v1::JobResultsChunk chunk;
    const size_t end = at + kChunk;
    if (at < json.size()) chunk.set_results_json(json.substr(at, std::min(end, json.size()) - at));
    if (end > json.size()) {
      const size_t from = at > json.size() ? at - json.size() : 0;
      chunk.set_results_csv(csv.substr(from, std::min(end - json.size(), csv.size()) - from));
    }
    if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
  }
  return grpc::Status::OK;
}

namespace {
constexpr int32_t kMaxListedJobs = 10000;
}  // namespace

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* context,
                                      const v1::ListJobsRequest* request,
                                      v1::ListJobsResponse* response) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (request->limit() < 0 || request->limit() > kMaxListedJobs) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("limit must be in [0, ", kMaxListedJobs, "] (0: the 100 newest jobs)"));
  }
  absl::StatusOr<std::vector<v1::Job>> jobs = jobs_->List(request->limit());
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  // Newest first, while the answer stays under its byte budget (a job's spec can be
  // megabytes); the rest are counted, so that the client can say so.
  int64_t bytes = 0;
  for (v1::Job& job : *jobs) {
    job.clear_results_json();  // listings stay small; GetJob has them
    job.clear_results_csv();
    const int64_t size = static_cast<int64_t>(job.ByteSizeLong());
    if (response->omitted() > 0 || bytes + size > limits_.max_listing_bytes) {
      response->set_omitted(response->omitted() + 1);
      continue;
    }
    bytes += size;
    *response->add_jobs() = std::move(job);
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* context,
                                       const v1::CancelJobRequest* request, v1::Job* response) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (grpc::Status s = CheckUtf8(request->job_id(), "job_id"); !s.ok()) return s;
  absl::StatusOr<v1::Job> job = jobs_->Cancel(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response = Outgoing(*std::move(job));
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::SubmitSeries(grpc::ServerContext* context,
                                          const v1::SubmitSeriesRequest* request,
                                          v1::Series* response) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (series_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this server keeps no series");
  }
  if (grpc::Status s = ToGrpcStatus(CheckRequestSize(*request, limits_.max_request_bytes));
      !s.ok()) {
    return s;
  }
  for (int i = 0; i < request->tasks_size(); ++i) {
    if (grpc::Status s = CheckUtf8(request->tasks(i), absl::StrCat("tasks[", i, "]")); !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<v1::Series> submitted = series_->Submit(*request);
  if (!submitted.ok()) return ToGrpcStatus(submitted.status());
  absl::StatusOr<v1::Series> series = series_->Get(submitted->id());
  if (!series.ok()) return ToGrpcStatus(series.status());
  *response = *std::move(series);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::GetSeries(grpc::ServerContext* context,
                                       const v1::GetSeriesRequest* request, v1::Series* response) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (series_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this server keeps no series");
  }
  if (grpc::Status s = CheckUtf8(request->series_id(), "series_id"); !s.ok()) return s;
  absl::StatusOr<v1::Series> series = series_->Get(request->series_id());
  if (!series.ok()) return ToGrpcStatus(series.status());
  *response = *std::move(series);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::ListSeries(grpc::ServerContext* context,
                                        const v1::ListSeriesRequest* request,
                                        v1::ListSeriesResponse* response) {
  if (grpc::Status s = Admit(*context); !s.ok()) return s;
  if (series_ == nullptr) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this server keeps no series");
  }
  if (request->limit() < 0 || request->limit() > kMaxListedJobs) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("limit must be in [0, ", kMaxListedJobs, "] (0: the 100 newest series)"));
  }
  absl::StatusOr<std::vector<v1::Series>> list = series_->List(request->limit());
  if (!list.ok()) return ToGrpcStatus(list.status());
  int64_t bytes = 0;
  for (v1::Series& series : *list) {
    const int64_t size = static_cast<int64_t>(series.ByteSizeLong());
    if (response->omitted() > 0 || bytes + size > limits_.max_listing_bytes) {
      response->set_omitted(response->omitted() + 1);
      continue;
    }
    bytes += size;
    *response->add_series() = std::move(series);
  }
  return grpc::Status::OK;
}

}  // namespace hgeval::server
