// The result store: SQLite file holding every computed model result, keyed by
// (model content hash, tokenizer hash, request kind, digest of the canonical request),
// and the jobs table. Results are written as soon as they are computed, so a killed
// server loses at most the batch in flight. Thread-safe (one connection, one mutex;
// WAL journal, synchronous=NORMAL: durable across process crashes).
#ifndef HGEVAL_SERVER_RESULT_STORE_H_
#define HGEVAL_SERVER_RESULT_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

struct sqlite3;

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

struct StoreStats {
  int64_t results = 0;            // rows in the results table
  int64_t computations = 0;       // sum of compute counts (every time a result was written)
  int64_t max_compute_count = 0;  // 1 means no request was ever computed twice
};

class ResultStore {
 public:
  // Opens (creating if needed) the database file. ":memory:" gives a private store.
  static absl::StatusOr<std::unique_ptr<ResultStore>> Open(const std::string& path);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  // Stored responses, one per key (nullopt where none). A row whose checksum does not
  // match its key and response (bit rot), or that has none (written by a version before
  // checksums), is reported as absent and logged, so the caller recomputes and rewrites it.
  absl::StatusOr<std::vector<std::optional<std::string>>> GetMany(
      const std::vector<StoreKey>& keys);
  // Writes results in one transaction. A key written again keeps the newest response
  // and counts one more computation.
  absl::Status PutMany(const std::vector<std::pair<StoreKey, std::string>>& entries);

  absl::Status PutJob(const StoredJob& job);
  absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& id);
  // Newest first.
  absl::StatusOr<std::vector<StoredJob>> ListJobs(int limit);
  // Jobs in any of `states`, oldest first.
  absl::StatusOr<std::vector<StoredJob>> JobsInStates(const std::vector<int>& states);

  absl::StatusOr<StoreStats> Stats();
  // Rows found damaged by GetMany since the store was opened.
  int64_t damaged_rows() const { return damaged_rows_.load(); }

 private:
  explicit ResultStore(sqlite3* db) : db_(db) {}
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> damaged_rows_{0};
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_RESULT_STORE_H_
