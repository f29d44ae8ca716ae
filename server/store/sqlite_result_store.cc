#include "server/store/sqlite_result_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/core/log.h"
#include "server/store/sql_result_store.h"

namespace hgeval::server {

absl::Status SqliteStatus(int code, const std::string& what, const std::string& detail) {
  const std::string message = absl::StrCat("result store: ", what, ": ", detail);
  switch (code & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      // A damaged file: the wire contract's code for unrecoverable data, not a server bug.
      return absl::DataLossError(message);
    case SQLITE_FULL: {
      // Nothing stored is lost; what could not be written is computed again later.
      static std::atomic<int64_t> last_logged{0};
      const int64_t now = absl::ToUnixSeconds(absl::Now());
      if (now - last_logged.exchange(now) >= 60) {
        LogError("store_disk_full", {{"error", message}});
      }
      return absl::ResourceExhaustedError(
          absl::StrCat(message,
                       " (the disk holding the result store is full: free space there; stored "
                       "results are kept, and what could not be written is computed again)"));
    }
    case SQLITE_READONLY:
      if (code == SQLITE_READONLY_DBMOVED) {
        return absl::UnavailableError(
            absl::StrCat(message,
                         " (the store file was deleted or moved while the server ran; restart "
                         "the server to use a file at --store again)"));
      }
      return absl::UnavailableError(
          absl::StrCat(message,
                       " (the store file or its folder is read-only: the file is not damaged; "
                       "make both writable, SQLite writes its -wal and -shm files beside it)"));
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

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
  int Step() { return sqlite3_step(stmt_); }
  int64_t ColumnInt(int i) { return sqlite3_column_int64(stmt_, i); }
  bool ColumnNull(int i) { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
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
  return SqliteStatus(sqlite3_extended_errcode(db), what, sqlite3_errmsg(db));
}

constexpr char kJobColumns[] = "id, state, created_at, job";
constexpr char kShardColumns[] =
    "job_id, shard, state, owner, attempts, requests_total, requests_done, requests_cached, "
    "result";

StoredJob ReadJob(Statement& st, int first = 0) {
  StoredJob job;
  job.id = st.ColumnText(first);
  job.state = static_cast<int>(st.ColumnInt(first + 1));
  job.created_at = st.ColumnInt(first + 2);
  job.blob = st.ColumnBlob(first + 3);
  return job;
}

JobShard ReadShard(Statement& st, int first = 0) {
  JobShard shard;
  shard.job_id = st.ColumnText(first);
  shard.index = static_cast<int>(st.ColumnInt(first + 1));
  shard.state = static_cast<int>(st.ColumnInt(first + 2));
  shard.owner = st.ColumnText(first + 3);
  shard.attempts = st.ColumnInt(first + 4);
  shard.requests_total = st.ColumnInt(first + 5);
  shard.requests_done = st.ColumnInt(first + 6);
  shard.requests_cached = st.ColumnInt(first + 7);
  shard.result = st.ColumnBlob(first + 8);
  return shard;
}

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

class SqliteResultStore : public SqlResultStore {
 public:
  SqliteResultStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {
    struct stat st;
    watched_ = IsFilePath(path_) && stat(path_.c_str(), &st) == 0;
    if (watched_) {
      device_ = st.st_dev;
      inode_ = st.st_ino;
    }
  }
  ~SqliteResultStore() override {
    absl::MutexLock lock(&mu_);
    sqlite3_close(db_);
  }

  absl::Status CreateSchema() {
    absl::MutexLock lock(&mu_);
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
             "CREATE TABLE IF NOT EXISTS series ("
             "  id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, series BLOB NOT NULL)",
             "CREATE TABLE IF NOT EXISTS job_shards ("
             "  job_id TEXT NOT NULL, shard INTEGER NOT NULL,"
             "  state INTEGER NOT NULL DEFAULT 0, owner TEXT NOT NULL DEFAULT '',"
             "  lease_until INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,"
             "  requests_total INTEGER NOT NULL DEFAULT 0,"
             "  requests_done INTEGER NOT NULL DEFAULT 0,"
             "  requests_cached INTEGER NOT NULL DEFAULT 0,"
             "  result BLOB NOT NULL DEFAULT x'',"
             "  PRIMARY KEY (job_id, shard)) WITHOUT ROWID",
         }) {
      if (absl::Status s = Exec(sql); !s.ok()) return s;
    }
    // Stores written before rows carried checksums gain the column; their rows have none
    // and are recomputed on first use (an unverifiable row is never served).
    Statement st(db_, "SELECT 1 FROM pragma_table_info('results') WHERE name='checksum'");
    if (!st.ok()) return SqliteError(db_, "read the results table's columns");
    const int rc = st.Step();
    if (rc == SQLITE_DONE) return Exec("ALTER TABLE results ADD COLUMN checksum TEXT");
    if (rc != SQLITE_ROW) return SqliteError(db_, "read the results table's columns");
    return absl::OkStatus();
  }

  const char* backend() const override { return "sqlite"; }

  absl::StatusOr<std::vector<std::optional<std::string>>> GetMany(
      const std::vector<StoreKey>& keys) override {
    absl::MutexLock lock(&mu_);
    std::vector<std::optional<std::string>> out(keys.size());
    Statement st(db_,
                 "SELECT response, checksum FROM results WHERE model_hash=?1 AND "
                 "tokenizer_hash=?2 AND kind=?3 AND request_digest=?4");
    if (!st.ok()) return SqliteError(db_, "prepare select");
    RowCheckCounts counts;
    for (size_t i = 0; i < keys.size(); ++i) {
      sqlite3_reset(st.get());
      st.BindText(1, keys[i].model_hash);
      st.BindText(2, keys[i].tokenizer_hash);
      st.BindText(3, keys[i].kind);
      st.BindText(4, keys[i].request_digest);
      int rc = st.Step();
      if (rc == SQLITE_ROW) {
        std::optional<std::string> checksum;
        if (!st.ColumnNull(1)) checksum = st.ColumnText(1);
        out[i] = VerifiedResponse(keys[i], st.ColumnBlob(0), checksum, counts);
      } else if (rc != SQLITE_DONE) {
        return SqliteError(db_, "select");
      }
    }
    CountDamaged(counts.damaged);
    LogUnverifiableRows(counts);
    return out;
  }

  absl::Status PutMany(const std::vector<std::pair<StoreKey, std::string>>& entries) override {
    if (entries.empty()) return absl::OkStatus();
    absl::MutexLock lock(&mu_);
    return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
      Statement st(db_,
                   "INSERT INTO results (model_hash, tokenizer_hash, kind, request_digest,"
                   " response, compute_count, created_at, checksum)"
                   " VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7)"
                   " ON CONFLICT DO UPDATE SET response=excluded.response,"
                   " checksum=excluded.checksum, compute_count=compute_count+1");
      if (!st.ok()) return SqliteError(db_, "prepare insert");
      const int64_t now = static_cast<int64_t>(std::time(nullptr));
      for (const auto& [key, response] : entries) {
        sqlite3_reset(st.get());
        st.BindText(1, key.model_hash);
        st.BindText(2, key.tokenizer_hash);
        st.BindText(3, key.kind);
        st.BindText(4, key.request_digest);
        st.BindBlob(5, response);
        st.BindInt(6, now);
        st.BindText(7, ResultRowChecksum(key, response));
        if (st.Step() != SQLITE_DONE) return SqliteError(db_, "insert");
      }
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::vector<StoredJob>> ListJobs(int limit) override {
    absl::MutexLock lock(&mu_);
    Statement st(db_, absl::StrCat("SELECT ", kJobColumns,
                                   " FROM jobs ORDER BY created_at DESC, id DESC LIMIT ?1")
                          .c_str());
    if (!st.ok()) return SqliteError(db_, "prepare job list");
    st.BindInt(1, limit);
    std::vector<StoredJob> jobs;
    int rc;
    while ((rc = st.Step()) == SQLITE_ROW) jobs.push_back(ReadJob(st));
    if (rc != SQLITE_DONE) return SqliteError(db_, "job list");
    return jobs;
  }

  absl::Status PutSeries(const StoredSeries& series) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckFile(); !s.ok()) return s;
    Statement st(db_,
                 "INSERT INTO series (id, created_at, series) VALUES (?1, ?2, ?3)"
                 " ON CONFLICT DO UPDATE SET series=excluded.series");
    if (!st.ok()) return SqliteError(db_, "prepare series insert");
    st.BindText(1, series.id);
    st.BindInt(2, series.created_at);
    st.BindBlob(3, series.blob);
    if (st.Step() != SQLITE_DONE) return SqliteError(db_, "series insert");
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<StoredSeries>> GetSeries(const std::string& id) override {
    absl::StatusOr<std::vector<StoredSeries>> rows =
        SelectSeries("SELECT id, created_at, series FROM series WHERE id=?1", id, 1);
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return std::optional<StoredSeries>();
    return std::optional<StoredSeries>(std::move(rows->front()));
  }

  absl::StatusOr<std::vector<StoredSeries>> ListSeries(int limit) override {
    return SelectSeries(
        "SELECT id, created_at, series FROM series ORDER BY created_at DESC, id DESC LIMIT ?1",
        std::nullopt, limit);
  }

  absl::StatusOr<std::vector<StoredJob>> JobsInStates(const std::vector<int>& states) override {
    absl::MutexLock lock(&mu_);
    Statement st(
        db_,
        absl::StrCat("SELECT ", kJobColumns, " FROM jobs ORDER BY created_at ASC, id ASC").c_str());
    if (!st.ok()) return SqliteError(db_, "prepare job scan");
    std::vector<StoredJob> jobs;
    int rc;
    while ((rc = st.Step()) == SQLITE_ROW) {
      StoredJob job = ReadJob(st);
      if (std::find(states.begin(), states.end(), job.state) != states.end()) {
        jobs.push_back(std::move(job));
      }
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, "job scan");
    return jobs;
  }

  absl::StatusOr<std::optional<JobShard>> ClaimShardRow(
      const std::string& owner, int64_t lease_ms,
      const std::vector<int>& runnable_job_states) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t now = NowMs();
    Statement st(db_,
                 "SELECT j.id, j.state, s.shard FROM job_shards s JOIN jobs j ON j.id = s.job_id"
                 " WHERE s.state = ?1 OR (s.state = ?2 AND s.lease_until < ?3)"
                 " ORDER BY j.created_at, j.id, s.shard");
    if (!st.ok()) return SqliteError(db_, "prepare shard scan");
    st.BindInt(1, kShardQueued);
    st.BindInt(2, kShardRunning);
    st.BindInt(3, now);
    int rc;
    int index = -1;
    std::string job_id;
    while ((rc = st.Step()) == SQLITE_ROW) {
      const int state = static_cast<int>(st.ColumnInt(1));
      if (std::find(runnable_job_states.begin(), runnable_job_states.end(), state) !=
          runnable_job_states.end()) {
        job_id = st.ColumnText(0);
        index = static_cast<int>(st.ColumnInt(2));
        break;
      }
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return SqliteError(db_, "shard scan");
    if (index < 0) return std::optional<JobShard>();
    Statement update(db_,
                     "UPDATE job_shards SET state=?1, owner=?2, lease_until=?3,"
                     " attempts=attempts+1 WHERE job_id=?4 AND shard=?5");
    if (!update.ok()) return SqliteError(db_, "prepare shard claim");
    update.BindInt(1, kShardRunning);
    update.BindText(2, owner);
    update.BindInt(3, now + lease_ms);
    update.BindText(4, job_id);
    update.BindInt(5, index);
    if (update.Step() != SQLITE_DONE) return SqliteError(db_, "shard claim");
    absl::StatusOr<std::vector<JobShard>> shards = ReadShardRows(job_id, index);
    if (!shards.ok()) return shards.status();
    if (shards->empty()) return absl::InternalError("result store: claimed shard vanished");
    return std::optional<JobShard>(std::move(shards->front()));
  }

  absl::StatusOr<std::optional<int>> RenewShard(const std::string& job_id, int index,
                                                const std::string& owner, int64_t lease_ms,
                                                const ShardProgress& progress) override {
    absl::MutexLock lock(&mu_);
    std::optional<int> job_state;
    absl::Status status = InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
      Statement st(db_,
                   "UPDATE job_shards SET lease_until=?1, requests_total=?2, requests_done=?3,"
                   " requests_cached=?4 WHERE job_id=?5 AND shard=?6 AND owner=?7 AND state=?8");
      if (!st.ok()) return SqliteError(db_, "prepare lease renewal");
      st.BindInt(1, NowMs() + lease_ms);
      st.BindInt(2, progress.requests_total);
      st.BindInt(3, progress.requests_done);
      st.BindInt(4, progress.requests_cached);
      st.BindText(5, job_id);
      st.BindInt(6, index);
      st.BindText(7, owner);
      st.BindInt(8, kShardRunning);
      if (st.Step() != SQLITE_DONE) return SqliteError(db_, "lease renewal");
      if (sqlite3_changes(db_) == 0) return absl::OkStatus();
      absl::StatusOr<std::optional<StoredJob>> job = ReadJobRow(job_id, false);
      if (!job.ok()) return job.status();
      if (job->has_value()) job_state = (*job)->state;
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    return job_state;
  }

  absl::Status ReleaseShards(const std::string& owner) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = CheckFile(); !s.ok()) return s;
    Statement st(db_, "UPDATE job_shards SET state=?1, lease_until=0 WHERE owner=?2 AND state=?3");
    if (!st.ok()) return SqliteError(db_, "prepare shard release");
    st.BindInt(1, kShardQueued);
    st.BindText(2, owner);
    st.BindInt(3, kShardRunning);
    if (st.Step() != SQLITE_DONE) return SqliteError(db_, "shard release");
    return absl::OkStatus();
  }

  absl::StatusOr<StoreStats> Stats() override {
    absl::MutexLock lock(&mu_);
    Statement st(db_,
                 "SELECT COUNT(*), COALESCE(SUM(compute_count), 0), "
                 "COALESCE(MAX(compute_count), 0) FROM results");
    if (!st.ok() || st.Step() != SQLITE_ROW) return SqliteError(db_, "stats");
    StoreStats stats;
    stats.results = st.ColumnInt(0);
    stats.computations = st.ColumnInt(1);
    stats.max_compute_count = st.ColumnInt(2);
    return stats;
  }

 private:
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      std::string message = error ? error : "unknown error";
      sqlite3_free(error);
      return SqliteStatus(sqlite3_extended_errcode(db_), sql, message);
    }
    return absl::OkStatus();
  }

  // Runs `body` in a write transaction (BEGIN IMMEDIATE: other processes on the file
  // wait for it), committed when it returns OK and rolled back otherwise.
  absl::Status InTransaction(const std::function<absl::Status()>& body) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (absl::Status s = CheckFile(); !s.ok()) return s;
    if (absl::Status s = Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
    absl::Status s = body();
    if (!s.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return s;
    }
    return Exec("COMMIT");
  }

  // Series rows of `sql` (?1: `id` when given, else `limit`).
  absl::StatusOr<std::vector<StoredSeries>> SelectSeries(const char* sql,
                                                         const std::optional<std::string>& id,
                                                         int limit) {
    absl::MutexLock lock(&mu_);
    Statement st(db_, sql);
    if (!st.ok()) return SqliteError(db_, "prepare series select");
    if (id.has_value()) {
      st.BindText(1, *id);
    } else {
      st.BindInt(1, limit);
    }
    std::vector<StoredSeries> rows;
    int rc;
    while ((rc = st.Step()) == SQLITE_ROW) {
      rows.push_back({st.ColumnText(0), st.ColumnInt(1), st.ColumnBlob(2)});
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, "series select");
    return rows;
  }

  absl::Status WriteJob(const StoredJob& job) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (absl::Status s = CheckFile(); !s.ok()) return s;
    Statement st(db_,
                 "INSERT INTO jobs (id, state, created_at, job) VALUES (?1, ?2, ?3, ?4)"
                 " ON CONFLICT DO UPDATE SET state=excluded.state, job=excluded.job");
    if (!st.ok()) return SqliteError(db_, "prepare job insert");
    st.BindText(1, job.id);
    st.BindInt(2, job.state);
    st.BindInt(3, job.created_at);
    st.BindBlob(4, job.blob);
    if (st.Step() != SQLITE_DONE) return SqliteError(db_, "job insert");
    return absl::OkStatus();
  }

  // BEGIN IMMEDIATE already serializes writers: no row locks.
  absl::StatusOr<std::optional<StoredJob>> ReadJobRow(const std::string& id, bool) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Statement st(db_, absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id=?1").c_str());
    if (!st.ok()) return SqliteError(db_, "prepare job select");
    st.BindText(1, id);
    int rc = st.Step();
    if (rc == SQLITE_ROW) return std::optional<StoredJob>(ReadJob(st));
    if (rc != SQLITE_DONE) return SqliteError(db_, "job select");
    return std::optional<StoredJob>();
  }

  absl::Status InsertShards(const std::string& job_id, int shards) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Statement st(db_,
                 "INSERT INTO job_shards (job_id, shard) VALUES (?1, ?2) ON CONFLICT DO NOTHING");
    if (!st.ok()) return SqliteError(db_, "prepare shard insert");
    for (int i = 0; i < shards; ++i) {
      sqlite3_reset(st.get());
      st.BindText(1, job_id);
      st.BindInt(2, i);
      if (st.Step() != SQLITE_DONE) return SqliteError(db_, "shard insert");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<JobShard>> ReadShards(const std::string& job_id) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ReadShardRows(job_id, -1);
  }

  absl::StatusOr<bool> MarkShardDone(const std::string& job_id, int index, const std::string& owner,
                                     const std::string& result,
                                     const ShardProgress& progress) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Statement st(db_,
                 "UPDATE job_shards SET state=?1, result=?2, lease_until=0, requests_total=?7,"
                 " requests_done=?8, requests_cached=?9"
                 " WHERE job_id=?3 AND shard=?4 AND owner=?5 AND state=?6");
    if (!st.ok()) return SqliteError(db_, "prepare shard finish");
    st.BindInt(1, kShardDone);
    st.BindBlob(2, result);
    st.BindText(3, job_id);
    st.BindInt(4, index);
    st.BindText(5, owner);
    st.BindInt(6, kShardRunning);
    st.BindInt(7, progress.requests_total);
    st.BindInt(8, progress.requests_done);
    st.BindInt(9, progress.requests_cached);
    if (st.Step() != SQLITE_DONE) return SqliteError(db_, "shard finish");
    return sqlite3_changes(db_) > 0;
  }

  // All of a job's shards in index order, or only shard `only` when >= 0.
  absl::StatusOr<std::vector<JobShard>> ReadShardRows(const std::string& job_id, int only)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Statement st(db_, absl::StrCat("SELECT ", kShardColumns,
                                   " FROM job_shards WHERE job_id=?1 AND (?2 < 0 OR shard=?2)"
                                   " ORDER BY shard")
                          .c_str());
    if (!st.ok()) return SqliteError(db_, "prepare shard select");
    st.BindText(1, job_id);
    st.BindInt(2, only);
    std::vector<JobShard> shards;
    int rc;
    while ((rc = st.Step()) == SQLITE_ROW) shards.push_back(ReadShard(st));
    if (rc != SQLITE_DONE) return SqliteError(db_, "shard select");
    return shards;
  }

  static bool IsFilePath(const std::string& path) {
    return !path.empty() && path != ":memory:" && !absl::StartsWith(path, "file:");
  }

  // Is the file at path_ still the one this connection writes? A deleted or replaced
  // file would take every later write with it at the next start.
  absl::Status CheckFile() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!watched_) return absl::OkStatus();
    struct stat st;
    std::string problem;
    if (stat(path_.c_str(), &st) != 0) {
      problem = absl::StrCat("the result store file ", path_,
                             " was deleted or moved while the server ran (", strerror(errno),
                             "): what is written now would be lost at the next start; "
                             "restore the file, or restart the server to start a new one");
    } else if (st.st_dev != device_ || st.st_ino != inode_) {
      problem = absl::StrCat("the result store file ", path_,
                             " was replaced by another file while the server ran: this server "
                             "still has the old one open; restart it to use the new file");
    }
    if (problem.empty()) return absl::OkStatus();
    if (problem != reported_) {
      LogError("store_file_lost", {{"store", path_}, {"error", problem}});
      reported_ = problem;
    }
    return absl::UnavailableError(problem);
  }

  sqlite3* db_ ABSL_GUARDED_BY(mu_);
  const std::string path_;
  bool watched_ = false;
  dev_t device_ = 0;
  ino_t inode_ = 0;
  std::string reported_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResultStore>> OpenSqliteResultStore(const std::string& path) {
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
  auto store = std::make_unique<SqliteResultStore>(db, path);
  if (absl::Status s = store->CreateSchema(); !s.ok()) return s;
  return store;
}

}  // namespace hgeval::server
