#include "server/store/sql_result_store.h"

#include "absl/strings/str_cat.h"
#include "server/core/echoed_name.h"

namespace hgeval::server {

absl::Status SqlResultStore::PutJob(const StoredJob& job) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Ready(); !s.ok()) return s;
  return WriteJob(job);
}

absl::StatusOr<std::optional<StoredJob>> SqlResultStore::GetJob(const std::string& id) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Ready(); !s.ok()) return s;
  return ReadJobRow(id, /*lock_row=*/false);
}

absl::Status SqlResultStore::CreateJob(const StoredJob& job, int shards) {
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    if (absl::Status s = WriteJob(job); !s.ok()) return s;
    return InsertShards(job.id, shards);
  });
}

absl::Status SqlResultStore::EnsureShards(const std::string& job_id, int shards) {
  absl::MutexLock lock(&mu_);
  return InTransaction(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return InsertShards(job_id, shards); });
}

absl::StatusOr<std::vector<JobShard>> SqlResultStore::JobShards(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Ready(); !s.ok()) return s;
  return ReadShards(job_id);
}

absl::StatusOr<std::optional<ClaimedShard>> SqlResultStore::ClaimShard(
    const std::string& owner, int64_t lease_ms, const std::vector<int>& runnable_job_states) {
  absl::MutexLock lock(&mu_);
  std::optional<ClaimedShard> claimed;
  absl::Status status = InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    absl::StatusOr<std::optional<JobShard>> shard =
        ClaimShardRow(owner, lease_ms, runnable_job_states);
    if (!shard.ok()) return shard.status();
    if (!shard->has_value()) return absl::OkStatus();
    absl::StatusOr<std::optional<StoredJob>> job = ReadJobRow((*shard)->job_id, /*lock_row=*/false);
    if (!job.ok()) return job.status();
    if (!job->has_value()) return absl::InternalError("result store: claimed shard's job vanished");
    claimed = ClaimedShard{**std::move(job), **std::move(shard)};
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return claimed;
}

absl::StatusOr<bool> SqlResultStore::FinishShard(const std::string& job_id, int index,
                                                 const std::string& owner,
                                                 const std::string& result,
                                                 const ShardProgress& progress,
                                                 const JobRowChange& change) {
  absl::MutexLock lock(&mu_);
  bool owned = false;
  absl::Status status = InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    // The job row first: servers finishing a job's last shards at once take turns, so
    // exactly one of them sees every shard done.
    absl::StatusOr<std::optional<StoredJob>> job = ReadJobRow(job_id, /*lock_row=*/true);
    if (!job.ok()) return job.status();
    if (!job->has_value()) {
      return absl::NotFoundError(absl::StrCat("unknown job '", EchoedName(job_id), "'"));
    }
    absl::StatusOr<bool> marked = MarkShardDone(job_id, index, owner, result, progress);
    if (!marked.ok()) return marked.status();
    owned = *marked;
    if (!owned) return absl::OkStatus();
    return ApplyJobChange(job_id, change);
  });
  if (!status.ok()) return status;
  return owned;
}

absl::Status SqlResultStore::UpdateJob(const std::string& job_id, const JobRowChange& change) {
  absl::MutexLock lock(&mu_);
  return InTransaction(
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ApplyJobChange(job_id, change); });
}

absl::Status SqlResultStore::ApplyJobChange(const std::string& job_id, const JobRowChange& change) {
  absl::StatusOr<std::optional<StoredJob>> job = ReadJobRow(job_id, /*lock_row=*/true);
  if (!job.ok()) return job.status();
  if (!job->has_value()) {
    return absl::NotFoundError(absl::StrCat("unknown job '", EchoedName(job_id), "'"));
  }
  absl::StatusOr<std::vector<JobShard>> shards = ReadShards(job_id);
  if (!shards.ok()) return shards.status();
  absl::StatusOr<std::optional<StoredJob>> changed = change(**job, *shards);
  if (!changed.ok()) return changed.status();
  if (!changed->has_value()) return absl::OkStatus();
  return WriteJob(**changed);
}

}  // namespace hgeval::server
