// Job runner for builds without the tasks library: jobs are refused.
#include "server/job_runner.h"

namespace hgeval::server {

bool JobsSupported() { return false; }

absl::Status ValidateTasks(const std::vector<std::string>& tasks) {
  return absl::UnimplementedError("this server was built without the tasks library");
}

absl::StatusOr<std::string> RunJobTasks(const hgeval::v1::Job&, JobContext&) {
  return absl::UnimplementedError("this server was built without the tasks library");
}

absl::Status ValidateNiahJob(const hgeval::v1::NiahJobSpec&, const LoadedModel&) {
  return absl::UnimplementedError("this server was built without the tasks library");
}

absl::StatusOr<NiahJobOutput> RunNiahJob(const hgeval::v1::Job&, JobContext&) {
  return absl::UnimplementedError("this server was built without the tasks library");
}

}  // namespace hgeval::server
