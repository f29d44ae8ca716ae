// The result store: every computed model result, keyed by (model content hash, tokenizer
// hash, request kind, digest of the canonical request), the jobs table and the job
// shards that replicas claim. Results are written as soon as they are computed, so a
// killed server loses at most the batch in flight.
//
// Two backends behind one interface, chosen by ResultStore::Open's spec:
//   - a file path (or ":memory:"): SQLite, embedded, one server (server/store/sqlite_result_store)
//   - "postgresql://..." or "postgres://...": PostgreSQL through libpq, shared by a fleet of
//     servers (server/store/postgres_result_store)
// Both create and migrate their schema on open and are thread-safe.
#ifndef HGEVAL_SERVER_STORE_RESULT_STORE_H_
#define HGEVAL_SERVER_STORE_RESULT_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::server {

struct StoreKey {
  std::string model_hash;
  std::string tokenizer_hash;
  std::string kind;            // "loglikelihood", "generate"
  std::string request_digest;  // SHA-256 of the canonical request
};

struct StoredJob {
  std::string id;
  int state = 0;
  int64_t created_at = 0;
  std::string blob;  // serialized hgeval.v1.Job
};

// A checkpoint series' record (server/jobs/series_manager.h): its id, creation time and the
// serialized hgeval.v1.Series (its checkpoints and their job ids).
struct StoredSeries {
  std::string id;
  int64_t created_at = 0;
  std::string blob;
};

struct StoreStats {
  int64_t results = 0;            // rows in the results table
  int64_t computations = 0;       // sum of compute counts (every time a result was written)
  int64_t max_compute_count = 0;  // 1 means no request was ever computed twice
};

// A job is split into shards (server/jobs/job_shard_plan.h; opaque indices here), rows any replica
// claims with a lease. A claimer that dies stops renewing; once its lease has run out the
// shard is claimed again by another replica.
enum ShardState : int { kShardQueued = 0, kShardRunning = 1, kShardDone = 2 };

struct JobShard {
  std::string job_id;
  int index = 0;
  int state = kShardQueued;
  std::string owner;     // replica that claimed it last
  int64_t attempts = 0;  // times claimed
  int64_t requests_total = 0;
  int64_t requests_done = 0;
  int64_t requests_cached = 0;
  std::string result;  // what the runner stored when the shard finished (opaque here)
};

struct ShardProgress {
  int64_t requests_total = 0;
  int64_t requests_done = 0;
  int64_t requests_cached = 0;
};

struct ClaimedShard {
  StoredJob job;
  JobShard shard;  // as claimed (state running, attempts counted)
};

// Given the job row and all its shards (locked, in one transaction): the job row to
// write, or nullopt to leave it.
using JobRowChange = std::function<absl::StatusOr<std::optional<StoredJob>>(
    const StoredJob& job, const std::vector<JobShard>& shards)>;

class ResultStore {
 public:
  // Opens (creating or migrating the schema) the store named by `spec`: a SQLite file path
  // (":memory:" gives a private store) or a postgresql:// connection URI.
  static absl::StatusOr<std::unique_ptr<ResultStore>> Open(const std::string& spec);
  virtual ~ResultStore() = default;

  // "sqlite" or "postgresql".
  virtual const char* backend() const = 0;

  // Stored responses, one per key (nullopt where none). A row whose checksum does not
  // match its key and response (bit rot), or that has none (written by a version before
  // checksums), is reported as absent and logged, so the caller recomputes and rewrites it.
  virtual absl::StatusOr<std::vector<std::optional<std::string>>> GetMany(
      const std::vector<StoreKey>& keys) = 0;
  // Writes results in one transaction. A key written again (by this server or another
  // sharing the store) stays one row: the newest response, one more computation counted.
  virtual absl::Status PutMany(const std::vector<std::pair<StoreKey, std::string>>& entries) = 0;

  // Inserts or replaces a job row.
  virtual absl::Status PutJob(const StoredJob& job) = 0;
  virtual absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& id) = 0;
  // Newest first.
  virtual absl::StatusOr<std::vector<StoredJob>> ListJobs(int limit) = 0;
  // Jobs in any of `states`, oldest first.
  virtual absl::StatusOr<std::vector<StoredJob>> JobsInStates(const std::vector<int>& states) = 0;

  // Inserts the job row and its `shards` queued shards in one transaction.
  virtual absl::Status CreateJob(const StoredJob& job, int shards) = 0;
  // Adds the shard rows a job lacks (jobs stored before shards existed); idempotent.
  virtual absl::Status EnsureShards(const std::string& job_id, int shards) = 0;
  virtual absl::StatusOr<std::vector<JobShard>> JobShards(const std::string& job_id) = 0;
  // Claims the oldest shard that is queued, or running with an expired lease, of a job in
  // one of `runnable_job_states`, for `owner` until now + `lease_ms`. Two replicas never
  // claim the same shard at once. nullopt: nothing to claim.
  virtual absl::StatusOr<std::optional<ClaimedShard>> ClaimShard(
      const std::string& owner, int64_t lease_ms, const std::vector<int>& runnable_job_states) = 0;
  // Extends `owner`'s lease and records progress. Returns the job row's state, or nullopt
  // when the shard is no longer `owner`'s (its lease ran out and another replica claimed it).
  virtual absl::StatusOr<std::optional<int>> RenewShard(const std::string& job_id, int index,
                                                        const std::string& owner, int64_t lease_ms,
                                                        const ShardProgress& progress) = 0;
  // Marks the shard done with `result` and its final `progress` (the row's progress columns
  // stay true after the last renewal) if `owner` still holds it, then calls `change` with
  // the job and every shard and writes the row it returns, all in one transaction (so
  // exactly one replica sees the last shard done). false: the shard was not `owner`'s.
  virtual absl::StatusOr<bool> FinishShard(const std::string& job_id, int index,
                                           const std::string& owner, const std::string& result,
                                           const ShardProgress& progress,
                                           const JobRowChange& change) = 0;
  // Calls `change` on the job row and its shards in one transaction (cancelling, failing).
  // NOT_FOUND for an unknown job.
  virtual absl::Status UpdateJob(const std::string& job_id, const JobRowChange& change) = 0;
  // Puts `owner`'s running shards back in the queue (a server stopping, or restarting under
  // the same name after a crash).
  virtual absl::Status ReleaseShards(const std::string& owner) = 0;

  virtual absl::StatusOr<StoreStats> Stats() = 0;

  // Series records: inserted or replaced whole; listed newest first.
  virtual absl::Status PutSeries(const StoredSeries& series) = 0;
  virtual absl::StatusOr<std::optional<StoredSeries>> GetSeries(const std::string& id) = 0;
  virtual absl::StatusOr<std::vector<StoredSeries>> ListSeries(int limit) = 0;
  // Rows found damaged by GetMany since the store was opened.
  virtual int64_t damaged_rows() const = 0;
};

// What each results row carries to catch bit rot: the first 128 bits of the SHA-256 of its
// key and response, so a flipped byte or a response under another key is noticed on read.
std::string ResultRowChecksum(const StoreKey& key, const std::string& response);

// For backends: checks a row read from the results table. Returns the response when its
// checksum verifies; otherwise counts it (damaged: logged; no checksum: written before
// checksums) and returns nullopt so that the caller recomputes it.
struct RowCheckCounts {
  int64_t damaged = 0;
  int64_t unverifiable = 0;
};
std::optional<std::string> VerifiedResponse(const StoreKey& key, std::string response,
                                            const std::optional<std::string>& checksum,
                                            RowCheckCounts& counts);
// Logs the unverifiable rows of one lookup.
void LogUnverifiableRows(const RowCheckCounts& counts);

// Whether `spec` names a PostgreSQL store (postgresql:// or postgres://).
bool IsPostgresStoreSpec(const std::string& spec);
// `spec` fit for logs: a password in a connection URI (user:password@, password=) masked.
std::string RedactedStoreSpec(const std::string& spec);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_STORE_RESULT_STORE_H_
