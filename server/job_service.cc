#include "server/job_service.h"

#include "absl/strings/str_cat.h"
#include "server/model_service.h"
#include "server/request_prep.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

grpc::Status JobServiceImpl::Admit(grpc::ServerContext* context) const {
  if (grpc::Status s = auth_->Check(*context); !s.ok()) return s;
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

grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext* context,
                                       const v1::SubmitJobRequest* request,
                                       v1::SubmitJobResponse* response) {
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  if (grpc::Status s = CheckSubmitNames(*request); !s.ok()) return s;
  absl::StatusOr<std::string> id = jobs_->Submit(*request);
  if (!id.ok()) return ToGrpcStatus(id.status());
  response->set_job_id(*id);
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::WatchJob(grpc::ServerContext* context,
                                      const v1::WatchJobRequest* request,
                                      grpc::ServerWriter<v1::Job>* writer) {
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  if (grpc::Status s = CheckUtf8(request->job_id(), "job_id"); !s.ok()) return s;
  return ToGrpcStatus(jobs_->Watch(
      request->job_id(), [writer](const v1::Job& job) { return writer->Write(job); },
      [context] { return context->IsCancelled(); }));
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                                    v1::Job* response) {
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  if (grpc::Status s = CheckUtf8(request->job_id(), "job_id"); !s.ok()) return s;
  absl::StatusOr<v1::Job> job = jobs_->Get(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response = *std::move(job);
  return grpc::Status::OK;
}

namespace {
constexpr int32_t kMaxListedJobs = 10000;
}  // namespace

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* context,
                                      const v1::ListJobsRequest* request,
                                      v1::ListJobsResponse* response) {
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  if (request->limit() < 0 || request->limit() > kMaxListedJobs) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("limit must be in [0, ", kMaxListedJobs, "] (0: the 100 newest jobs)"));
  }
  absl::StatusOr<std::vector<v1::Job>> jobs = jobs_->List(request->limit());
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (v1::Job& job : *jobs) {
    job.clear_results_json();  // listings stay small; GetJob has it
    *response->add_jobs() = std::move(job);
  }
  return grpc::Status::OK;
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* context,
                                       const v1::CancelJobRequest* request, v1::Job* response) {
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  if (grpc::Status s = CheckUtf8(request->job_id(), "job_id"); !s.ok()) return s;
  absl::StatusOr<v1::Job> job = jobs_->Cancel(request->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  *response = *std::move(job);
  return grpc::Status::OK;
}

}  // namespace hgeval::server
