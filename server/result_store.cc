#include "server/result_store.h"

#include <sqlite3.h>

#include <ctime>

#include "absl/strings/str_cat.h"
#include "server/log.h"
#include "server/sha256.h"

namespace hgeval::server {
namespace {

// Finalizes a prepared statement on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return stmt_; }
  void BindText(int i, const std::string& s) {
    sqlite3_bind_text(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void BindBlob(int i, const std::string& s) {
    sqlite3_bind_blob(stmt_, i, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  }
  void BindInt(int i, int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  std::string ColumnBlob(int i) {
    const void* data = sqlite3_column_blob(stmt_, i);
    int size = sqlite3_column_bytes(stmt_, i);
    return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), size);
  }
  std::string ColumnText(int i) {
    const unsigned char* data = sqlite3_column_text(stmt_, i);
    int size = sqlite3_column_bytes(stmt_, i);
    return data == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(data), size);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

absl::Status SqliteError(sqlite3* db, const char* what) {
  const std::string message = absl::StrCat("result store: ", what, ": ", sqlite3_errmsg(db));
  // A damaged file is DATA_LOSS (the wire contract's code for unrecoverable data), not a
  // server bug.
  const int code = sqlite3_errcode(db);
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) return absl::DataLossError(message);
  return absl::InternalError(message);
}

// What each results row carries to catch bit rot: the first 128 bits of the SHA-256 of its
// key and response, so a flipped byte or a response under another key is noticed on read.
std::string RowChecksum(const StoreKey& key, const std::string& response) {
  std::string canonical = absl::StrCat(key.model_hash, "\n", key.tokenizer_hash, "\n", key.kind,
                                       "\n", key.request_digest, "\n");
  canonical += response;
  return Sha256Hex(canonical).substr(0, 32);
}

StoredJob ReadJob(Statement& st) {
  StoredJob job;
  job.id = st.ColumnText(0);
  job.state = sqlite3_column_int(st.get(), 1);
  job.created_at = sqlite3_column_int64(st.get(), 2);
  job.blob = st.ColumnBlob(3);
  return job;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ResultStore>> ResultStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::UnavailableError(absl::StrCat("cannot open result store ", path, ": ", message));
  }
  sqlite3_busy_timeout(db, 10000);
  std::unique_ptr<ResultStore> store(new ResultStore(db));
  absl::MutexLock lock(&store->mu_);
  for (const char* sql : {
           "PRAGMA journal_mode=WAL",
           "PRAGMA synchronous=NORMAL",
           "CREATE TABLE IF NOT EXISTS results ("
           "  model_hash TEXT NOT NULL, tokenizer_hash TEXT NOT NULL, kind TEXT NOT NULL,"
           "  request_digest TEXT NOT NULL, response BLOB NOT NULL,"
           "  compute_count INTEGER NOT NULL DEFAULT 1, created_at INTEGER NOT NULL,"
           "  PRIMARY KEY (model_hash, tokenizer_hash, kind, request_digest)) WITHOUT ROWID",
           "CREATE TABLE IF NOT EXISTS jobs ("
           "  id TEXT PRIMARY KEY, state INTEGER NOT NULL, created_at INTEGER NOT NULL,"
           "  job BLOB NOT NULL)",
       }) {
    if (absl::Status s = store->Exec(sql); !s.ok()) return s;
  }
  // Stores written before rows carried checksums gain the column; their rows have none and
  // are recomputed on first use (an unverifiable row is never served).
  {
    Statement st(store->db_, "SELECT 1 FROM pragma_table_info('results') WHERE name='checksum'");
    if (!st.ok()) return SqliteError(store->db_, "read the results table's columns");
    const int rc = sqlite3_step(st.get());
    if (rc == SQLITE_DONE) {
      if (absl::Status s = store->Exec("ALTER TABLE results ADD COLUMN checksum TEXT"); !s.ok()) {
        return s;
      }
    } else if (rc != SQLITE_ROW) {
      return SqliteError(store->db_, "read the results table's columns");
    }
  }
  return store;
}

ResultStore::~ResultStore() {
  absl::MutexLock lock(&mu_);
  sqlite3_close(db_);
}

absl::Status ResultStore::Exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    return absl::InternalError(absl::StrCat("result store: ", sql, ": ", message));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::optional<std::string>>> ResultStore::GetMany(
    const std::vector<StoreKey>& keys) {
  absl::MutexLock lock(&mu_);
  std::vector<std::optional<std::string>> out(keys.size());
  Statement st(db_,
               "SELECT response, checksum FROM results WHERE model_hash=?1 AND "
               "tokenizer_hash=?2 AND kind=?3 AND request_digest=?4");
  if (!st.ok()) return SqliteError(db_, "prepare select");
  int64_t damaged = 0, unverifiable = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    sqlite3_reset(st.get());
    st.BindText(1, keys[i].model_hash);
    st.BindText(2, keys[i].tokenizer_hash);
    st.BindText(3, keys[i].kind);
    st.BindText(4, keys[i].request_digest);
    int rc = sqlite3_step(st.get());
    if (rc == SQLITE_ROW) {
      std::string response = st.ColumnBlob(0);
      if (sqlite3_column_type(st.get(), 1) == SQLITE_NULL) {
        ++unverifiable;  // written before checksums: recompute
      } else if (st.ColumnText(1) != RowChecksum(keys[i], response)) {
        ++damaged;
        LogWarning("store_row_damaged", {{"kind", keys[i].kind},
                                         {"request_digest", keys[i].request_digest},
                                         {"action", "recomputed"}});
      } else {
        out[i] = std::move(response);
      }
    } else if (rc != SQLITE_DONE) {
      return SqliteError(db_, "select");
    }
  }
  damaged_rows_ += damaged;
  if (unverifiable > 0) {
    LogInfo("store_rows_without_checksum",
            {{"rows", absl::StrCat(unverifiable)}, {"action", "recomputed"}});
  }
  return out;
}

absl::Status ResultStore::PutMany(const std::vector<std::pair<StoreKey, std::string>>& entries) {
  if (entries.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
  {
    Statement st(db_,
                 "INSERT INTO results (model_hash, tokenizer_hash, kind, request_digest,"
                 " response, compute_count, created_at, checksum)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7)"
                 " ON CONFLICT DO UPDATE SET response=excluded.response,"
                 " checksum=excluded.checksum, compute_count=compute_count+1");
    if (!st.ok()) {
      absl::Status s = SqliteError(db_, "prepare insert");
      Exec("ROLLBACK").IgnoreError();
      return s;
    }
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    for (const auto& [key, response] : entries) {
      sqlite3_reset(st.get());
      st.BindText(1, key.model_hash);
      st.BindText(2, key.tokenizer_hash);
      st.BindText(3, key.kind);
      st.BindText(4, key.request_digest);
      st.BindBlob(5, response);
      st.BindInt(6, now);
      st.BindText(7, RowChecksum(key, response));
      if (sqlite3_step(st.get()) != SQLITE_DONE) {
        absl::Status s = SqliteError(db_, "insert");
        Exec("ROLLBACK").IgnoreError();
        return s;
      }
    }
  }
  return Exec("COMMIT");
}

absl::Status ResultStore::PutJob(const StoredJob& job) {
  absl::MutexLock lock(&mu_);
  Statement st(db_,
               "INSERT INTO jobs (id, state, created_at, job) VALUES (?1, ?2, ?3, ?4)"
               " ON CONFLICT DO UPDATE SET state=excluded.state, job=excluded.job");
  if (!st.ok()) return SqliteError(db_, "prepare job insert");
  st.BindText(1, job.id);
  st.BindInt(2, job.state);
  st.BindInt(3, job.created_at);
  st.BindBlob(4, job.blob);
  if (sqlite3_step(st.get()) != SQLITE_DONE) return SqliteError(db_, "job insert");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<StoredJob>> ResultStore::GetJob(const std::string& id) {
  absl::MutexLock lock(&mu_);
  Statement st(db_, "SELECT id, state, created_at, job FROM jobs WHERE id=?1");
  if (!st.ok()) return SqliteError(db_, "prepare job select");
  st.BindText(1, id);
  int rc = sqlite3_step(st.get());
  if (rc == SQLITE_ROW) return std::optional<StoredJob>(ReadJob(st));
  if (rc != SQLITE_DONE) return SqliteError(db_, "job select");
  return std::optional<StoredJob>();
}

absl::StatusOr<std::vector<StoredJob>> ResultStore::ListJobs(int limit) {
  absl::MutexLock lock(&mu_);
  Statement st(db_,
               "SELECT id, state, created_at, job FROM jobs ORDER BY created_at DESC, id DESC "
               "LIMIT ?1");
  if (!st.ok()) return SqliteError(db_, "prepare job list");
  st.BindInt(1, limit);
  std::vector<StoredJob> jobs;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) jobs.push_back(ReadJob(st));
  if (rc != SQLITE_DONE) return SqliteError(db_, "job list");
  return jobs;
}

absl::StatusOr<std::vector<StoredJob>> ResultStore::JobsInStates(const std::vector<int>& states) {
  absl::MutexLock lock(&mu_);
  Statement st(db_, "SELECT id, state, created_at, job FROM jobs ORDER BY created_at ASC, id ASC");
  if (!st.ok()) return SqliteError(db_, "prepare job scan");
  std::vector<StoredJob> jobs;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    StoredJob job = ReadJob(st);
    for (int s : states) {
      if (job.state == s) {
        jobs.push_back(std::move(job));
        break;
      }
    }
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, "job scan");
  return jobs;
}

absl::StatusOr<StoreStats> ResultStore::Stats() {
  absl::MutexLock lock(&mu_);
  Statement st(db_,
               "SELECT COUNT(*), COALESCE(SUM(compute_count), 0), "
               "COALESCE(MAX(compute_count), 0) FROM results");
  if (!st.ok() || sqlite3_step(st.get()) != SQLITE_ROW) return SqliteError(db_, "stats");
  StoreStats stats;
  stats.results = sqlite3_column_int64(st.get(), 0);
  stats.computations = sqlite3_column_int64(st.get(), 1);
  stats.max_compute_count = sqlite3_column_int64(st.get(), 2);
  return stats;
}

}  // namespace hgeval::server
