// What the SQL backends (SQLite, PostgreSQL) share: the job and shard operations composed
// from a backend's row primitives, each run in one of its transactions under its
// connection's lock, and the count of damaged rows. A backend supplies the statements.
#ifndef HGEVAL_SERVER_STORE_SQL_RESULT_STORE_H_
#define HGEVAL_SERVER_STORE_SQL_RESULT_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/store/result_store.h"

namespace hgeval::server {

class SqlResultStore : public ResultStore {
 public:
  absl::Status PutJob(const StoredJob& job) final;
  absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& id) final;
  absl::Status CreateJob(const StoredJob& job, int shards) final;
  absl::Status EnsureShards(const std::string& job_id, int shards) final;
  absl::StatusOr<std::vector<JobShard>> JobShards(const std::string& job_id) final;
  absl::StatusOr<std::optional<ClaimedShard>> ClaimShard(
      const std::string& owner, int64_t lease_ms,
      const std::vector<int>& runnable_job_states) final;
  absl::StatusOr<bool> FinishShard(const std::string& job_id, int index, const std::string& owner,
                                   const std::string& result, const ShardProgress& progress,
                                   const JobRowChange& change) final;
  absl::Status UpdateJob(const std::string& job_id, const JobRowChange& change) final;
  int64_t damaged_rows() const final { return damaged_rows_.load(); }

 protected:
  // Runs `body` in a write transaction: committed when it returns OK, rolled back otherwise.
  virtual absl::Status InTransaction(const std::function<absl::Status()>& body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // Makes the connection usable before a statement outside a transaction (reconnects).
  virtual absl::Status Ready() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return absl::OkStatus(); }
  // Inserts or replaces a job row.
  virtual absl::Status WriteJob(const StoredJob& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // A job row; `lock_row`: held until the transaction ends (other servers' changes wait).
  virtual absl::StatusOr<std::optional<StoredJob>> ReadJobRow(const std::string& id, bool lock_row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // Queued shards 0..shards-1 that do not exist yet.
  virtual absl::Status InsertShards(const std::string& job_id, int shards)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // A job's shards in index order.
  virtual absl::StatusOr<std::vector<JobShard>> ReadShards(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // Claims (in the running transaction) the oldest claimable shard of a job in one of
  // `runnable_job_states` for `owner` until now + `lease_ms`; the shard as claimed.
  virtual absl::StatusOr<std::optional<JobShard>> ClaimShardRow(
      const std::string& owner, int64_t lease_ms, const std::vector<int>& runnable_job_states)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;
  // Marks the shard done with `result` and `progress` if `owner` holds it (running);
  // whether it did.
  virtual absl::StatusOr<bool> MarkShardDone(const std::string& job_id, int index,
                                             const std::string& owner, const std::string& result,
                                             const ShardProgress& progress)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;

  void CountDamaged(int64_t rows) { damaged_rows_ += rows; }

  absl::Mutex mu_;

 private:
  // Reads the (locked) job row and its shards, calls `change`, writes what it returns.
  absl::Status ApplyJobChange(const std::string& job_id, const JobRowChange& change)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::atomic<int64_t> damaged_rows_{0};
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_STORE_SQL_RESULT_STORE_H_
