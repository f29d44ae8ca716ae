#include "server/store/postgres_result_store.h"

#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <random>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/core/log.h"
#include "server/store/sql_result_store.h"

namespace hgeval::server {
namespace {

// The database's clock in Unix milliseconds: every replica's leases are measured on it.
constexpr char kNowMs[] = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
// Serializes schema creation between replicas starting at once (an arbitrary constant
// naming hgeval's schema lock).
constexpr char kSchemaLockKey[] = "720615342";
// A lost connection (a database restart, a network blip) is re-opened with backoff for up
// to this long before the store reports it unavailable: a restart takes seconds, and a
// failed write would fail the shard that made it.
constexpr absl::Duration kReconnectBudget = absl::Seconds(60);
constexpr absl::Duration kFirstReconnectDelay = absl::Milliseconds(100);
constexpr absl::Duration kMaxReconnectDelay = absl::Seconds(2);
// Whole transactions re-run after reconnecting, at most this many times per call.
constexpr int kMaxTransactionReconnects = 8;

constexpr char kJobColumns[] = "id, state, created_at, job";
constexpr char kShardColumns[] =
    "job_id, shard, state, owner, attempts, requests_total, requests_done, requests_cached, "
    "result";

// One query parameter: text, or bytes sent in binary (bytea).
struct Param {
  std::string value;
  bool binary = false;
};
Param Text(std::string s) { return Param{std::move(s), false}; }
Param Int(int64_t v) { return Param{absl::StrCat(v), false}; }
Param Bytes(std::string s) { return Param{std::move(s), true}; }
// A PostgreSQL array literal of integers, for "= ANY($n::bigint[])".
Param IntArray(const std::vector<int>& values) {
  return Param{absl::StrCat("{", absl::StrJoin(values, ","), "}"), false};
}
// A PostgreSQL array literal of strings, each quoted, for "= ANY($n::text[])".
Param TextArray(const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  out += '}';
  return Param{std::move(out), false};
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// Columns of a result in binary format.
std::string GetBytes(const Result& r, int row, int col) {
  return std::string(PQgetvalue(r.get(), row, col), PQgetlength(r.get(), row, col));
}
int64_t GetInt(const Result& r, int row, int col) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(PQgetvalue(r.get(), row, col));
  const int n = PQgetlength(r.get(), row, col);
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];  // network byte order
  if (n == 8) return static_cast<int64_t>(v);
  if (n == 4) return static_cast<int32_t>(v);
  if (n == 2) return static_cast<int16_t>(v);
  return 0;
}

StoredJob ReadJob(const Result& r, int row) {
  StoredJob job;
  job.id = GetBytes(r, row, 0);
  job.state = static_cast<int>(GetInt(r, row, 1));
  job.created_at = GetInt(r, row, 2);
  job.blob = GetBytes(r, row, 3);
  return job;
}

JobShard ReadShard(const Result& r, int row) {
  JobShard shard;
  shard.job_id = GetBytes(r, row, 0);
  shard.index = static_cast<int>(GetInt(r, row, 1));
  shard.state = static_cast<int>(GetInt(r, row, 2));
  shard.owner = GetBytes(r, row, 3);
  shard.attempts = GetInt(r, row, 4);
  shard.requests_total = GetInt(r, row, 5);
  shard.requests_done = GetInt(r, row, 6);
  shard.requests_cached = GetInt(r, row, 7);
  shard.result = GetBytes(r, row, 8);
  return shard;
}

// A PutMany's id, unique across servers and restarts (128 random bits).
std::string NewWriteId() {
  static absl::Mutex mu(absl::kConstInit);
  static std::mt19937_64* bits = [] {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device(), device(), device()};
    return new std::mt19937_64(seed);
  }();
  absl::MutexLock lock(&mu);
  return absl::StrFormat("%016x%016x", (*bits)(), (*bits)());
}

class PostgresResultStore : public SqlResultStore {
 public:
  explicit PostgresResultStore(PGconn* conn) : conn_(conn) {}
  ~PostgresResultStore() override {
    absl::MutexLock lock(&mu_);
    PQfinish(conn_);
  }

  absl::Status CreateSchema() {
    absl::MutexLock lock(&mu_);
    return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
      for (const std::string& sql : {
               absl::StrCat("SELECT pg_advisory_xact_lock(", kSchemaLockKey, ")"),
               std::string(
                   "CREATE TABLE IF NOT EXISTS results ("
                   "  model_hash TEXT NOT NULL, tokenizer_hash TEXT NOT NULL, kind TEXT NOT NULL,"
                   "  request_digest TEXT NOT NULL, response BYTEA NOT NULL,"
                   "  compute_count BIGINT NOT NULL DEFAULT 1, created_at BIGINT NOT NULL,"
                   "  PRIMARY KEY (model_hash, tokenizer_hash, kind, request_digest))"),
               // Migration: rows from before checksums have none (recomputed on use).
               std::string("ALTER TABLE results ADD COLUMN IF NOT EXISTS checksum TEXT"),
               // One row per committed PutMany: its re-run after a COMMIT whose reply was
               // lost finds its row and applies nothing twice. Kept a day.
               std::string("CREATE TABLE IF NOT EXISTS result_writes ("
                           "  id TEXT PRIMARY KEY, created_at BIGINT NOT NULL)"),
               absl::StrCat("DELETE FROM result_writes WHERE created_at < ",
                            static_cast<int64_t>(std::time(nullptr)) - 86400),
               std::string("CREATE TABLE IF NOT EXISTS jobs ("
                           "  id TEXT PRIMARY KEY, state BIGINT NOT NULL,"
                           "  created_at BIGINT NOT NULL, job BYTEA NOT NULL)"),
               std::string("CREATE INDEX IF NOT EXISTS jobs_by_created ON jobs (created_at, id)"),
               std::string("CREATE TABLE IF NOT EXISTS series ("
                           "  id TEXT PRIMARY KEY, created_at BIGINT NOT NULL,"
                           "  series BYTEA NOT NULL)"),
               std::string(
                   "CREATE TABLE IF NOT EXISTS job_shards ("
                   "  job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,"
                   "  shard BIGINT NOT NULL, state BIGINT NOT NULL DEFAULT 0,"
                   "  owner TEXT NOT NULL DEFAULT '', lease_until BIGINT NOT NULL DEFAULT 0,"
                   "  attempts BIGINT NOT NULL DEFAULT 0,"
                   "  requests_total BIGINT NOT NULL DEFAULT 0,"
                   "  requests_done BIGINT NOT NULL DEFAULT 0,"
                   "  requests_cached BIGINT NOT NULL DEFAULT 0,"
                   "  result BYTEA NOT NULL DEFAULT '',"
                   "  PRIMARY KEY (job_id, shard))"),
               std::string("CREATE INDEX IF NOT EXISTS job_shards_by_state"
                           " ON job_shards (state, lease_until)"),
           }) {
        if (absl::StatusOr<Result> r = Query(sql, {}); !r.ok()) return r.status();
      }
      return absl::OkStatus();
    });
  }

  const char* backend() const override { return "postgresql"; }

  absl::StatusOr<std::vector<std::optional<std::string>>> GetMany(
      const std::vector<StoreKey>& keys) override {
    // One query per (model, tokenizer, kind): the digests as an array.
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<size_t>> groups;
    for (size_t i = 0; i < keys.size(); ++i) {
      groups[{keys[i].model_hash, keys[i].tokenizer_hash, keys[i].kind}].push_back(i);
    }
    std::vector<std::optional<std::string>> out(keys.size());
    RowCheckCounts counts;
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Ready(); !s.ok()) return s;
    for (const auto& [group, indices] : groups) {
      std::vector<std::string> digests;
      for (size_t i : indices) digests.push_back(keys[i].request_digest);
      absl::StatusOr<Result> r = Query(
          "SELECT request_digest, response, checksum FROM results WHERE model_hash=$1"
          " AND tokenizer_hash=$2 AND kind=$3 AND request_digest = ANY($4::text[])",
          {Text(std::get<0>(group)), Text(std::get<1>(group)), Text(std::get<2>(group)),
           TextArray(digests)});
      if (!r.ok()) return r.status();
      std::map<std::string, int> row_of;
      for (int row = 0; row < PQntuples(r->get()); ++row) row_of[GetBytes(*r, row, 0)] = row;
      for (size_t i : indices) {
        auto it = row_of.find(keys[i].request_digest);
        if (it == row_of.end()) continue;
        std::optional<std::string> checksum;
        if (!PQgetisnull(r->get(), it->second, 2)) checksum = GetBytes(*r, it->second, 2);
        out[i] = VerifiedResponse(keys[i], GetBytes(*r, it->second, 1), checksum, counts);
      }
    }
    CountDamaged(counts.damaged);
    LogUnverifiableRows(counts);
    return out;
  }

  absl::Status PutMany(const std::vector<std::pair<StoreKey, std::string>>& entries) override {
    if (entries.empty()) return absl::OkStatus();
    // Rows locked in key order, so two servers writing overlapping batches cannot deadlock.
    std::vector<const std::pair<StoreKey, std::string>*> sorted;
    sorted.reserve(entries.size());
    for (const auto& e : entries) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) {
      return std::tie(a->first.model_hash, a->first.tokenizer_hash, a->first.kind,
                      a->first.request_digest) < std::tie(b->first.model_hash,
                                                          b->first.tokenizer_hash, b->first.kind,
                                                          b->first.request_digest);
    });
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    const std::string write_id = NewWriteId();
    absl::MutexLock lock(&mu_);
    return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
      absl::StatusOr<Result> first = Query(
          "INSERT INTO result_writes (id, created_at) VALUES ($1, $2)"
          " ON CONFLICT (id) DO NOTHING RETURNING id",
          {Text(write_id), Int(now)});
      if (!first.ok()) return first.status();
      // A re-run of this write whose first COMMIT went through (its reply was lost with
      // the connection): the rows are in, with their counts; adding them again would
      // count each request computed twice.
      if (PQntuples(first->get()) == 0) return absl::OkStatus();
      for (const auto* entry : sorted) {
        const StoreKey& key = entry->first;
        absl::StatusOr<Result> r = Query(
            "INSERT INTO results (model_hash, tokenizer_hash, kind, request_digest, response,"
            " compute_count, created_at, checksum) VALUES ($1, $2, $3, $4, $5, 1, $6, $7)"
            " ON CONFLICT (model_hash, tokenizer_hash, kind, request_digest) DO UPDATE SET"
            " response = EXCLUDED.response, checksum = EXCLUDED.checksum,"
            " compute_count = results.compute_count + 1",
            {Text(key.model_hash), Text(key.tokenizer_hash), Text(key.kind),
             Text(key.request_digest), Bytes(entry->second), Int(now),
             Text(ResultRowChecksum(key, entry->second))});
        if (!r.ok()) return r.status();
      }
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::vector<StoredJob>> ListJobs(int limit) override {
    return SelectJobs(absl::StrCat("SELECT ", kJobColumns,
                                   " FROM jobs ORDER BY created_at DESC, id DESC LIMIT $1"),
                      {Int(limit)});
  }

  absl::Status PutSeries(const StoredSeries& series) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Ready(); !s.ok()) return s;
    return Query(
               "INSERT INTO series (id, created_at, series) VALUES ($1, $2, $3)"
               " ON CONFLICT (id) DO UPDATE SET series = EXCLUDED.series",
               {Text(series.id), Int(series.created_at), Bytes(series.blob)})
        .status();
  }

  absl::StatusOr<std::optional<StoredSeries>> GetSeries(const std::string& id) override {
    absl::StatusOr<std::vector<StoredSeries>> rows =
        SelectSeries("SELECT id, created_at, series FROM series WHERE id = $1", {Text(id)});
    if (!rows.ok()) return rows.status();
    if (rows->empty()) return std::optional<StoredSeries>();
    return std::optional<StoredSeries>(std::move(rows->front()));
  }

  absl::StatusOr<std::vector<StoredSeries>> ListSeries(int limit) override {
    return SelectSeries(
        "SELECT id, created_at, series FROM series ORDER BY created_at DESC, id DESC LIMIT $1",
        {Int(limit)});
  }

  absl::StatusOr<std::vector<StoredJob>> JobsInStates(const std::vector<int>& states) override {
    return SelectJobs(absl::StrCat("SELECT ", kJobColumns,
                                   " FROM jobs WHERE state = ANY($1::bigint[])"
                                   " ORDER BY created_at, id"),
                      {IntArray(states)});
  }

  absl::StatusOr<std::optional<JobShard>> ClaimShardRow(
      const std::string& owner, int64_t lease_ms,
      const std::vector<int>& runnable_job_states) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    // SKIP LOCKED: replicas claiming at the same moment take different shards.
    absl::StatusOr<Result> r =
        Query(absl::StrCat("UPDATE job_shards s SET state = $1, owner = $2, lease_until = ", kNowMs,
                           " + $3, attempts = s.attempts + 1"
                           " FROM (SELECT c.job_id, c.shard FROM job_shards c"
                           "       JOIN jobs j ON j.id = c.job_id"
                           "       WHERE j.state = ANY($4::bigint[]) AND (c.state = $5 OR"
                           "             (c.state = $1 AND c.lease_until < ",
                           kNowMs,
                           "))"
                           "       ORDER BY j.created_at, j.id, c.shard LIMIT 1"
                           "       FOR UPDATE OF c SKIP LOCKED) pick"
                           " WHERE s.job_id = pick.job_id AND s.shard = pick.shard RETURNING ",
                           "s.job_id, s.shard, s.state, s.owner, s.attempts, s.requests_total,"
                           " s.requests_done, s.requests_cached, s.result"),
              {Int(kShardRunning), Text(owner), Int(lease_ms), IntArray(runnable_job_states),
               Int(kShardQueued)});
    if (!r.ok()) return r.status();
    if (PQntuples(r->get()) == 0) return std::optional<JobShard>();
    return std::optional<JobShard>(ReadShard(*r, 0));
  }

  absl::StatusOr<std::optional<int>> RenewShard(const std::string& job_id, int index,
                                                const std::string& owner, int64_t lease_ms,
                                                const ShardProgress& progress) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Ready(); !s.ok()) return s;
    absl::StatusOr<Result> r = Query(
        absl::StrCat("UPDATE job_shards SET lease_until = ", kNowMs,
                     " + $1, requests_total = $2, requests_done = $3, requests_cached = $4"
                     " WHERE job_id = $5 AND shard = $6 AND owner = $7 AND state = $8"
                     " RETURNING (SELECT state FROM jobs WHERE id = $5)"),
        {Int(lease_ms), Int(progress.requests_total), Int(progress.requests_done),
         Int(progress.requests_cached), Text(job_id), Int(index), Text(owner), Int(kShardRunning)});
    if (!r.ok()) return r.status();
    if (PQntuples(r->get()) == 0) return std::optional<int>();
    return std::optional<int>(static_cast<int>(GetInt(*r, 0, 0)));
  }

  absl::Status ReleaseShards(const std::string& owner) override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Ready(); !s.ok()) return s;
    return Query(
               "UPDATE job_shards SET state = $1, lease_until = 0 WHERE owner = $2 AND state = $3",
               {Int(kShardQueued), Text(owner), Int(kShardRunning)})
        .status();
  }

  absl::StatusOr<StoreStats> Stats() override {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Ready(); !s.ok()) return s;
    absl::StatusOr<Result> r = Query(
        "SELECT COUNT(*)::bigint, COALESCE(SUM(compute_count), 0)::bigint,"
        " COALESCE(MAX(compute_count), 0)::bigint FROM results",
        {});
    if (!r.ok()) return r.status();
    StoreStats stats;
    stats.results = GetInt(*r, 0, 0);
    stats.computations = GetInt(*r, 0, 1);
    stats.max_compute_count = GetInt(*r, 0, 2);
    return stats;
  }

 private:
  // Reconnects a connection that was lost (a database restart, a network blip): retried
  // with backoff within kReconnectBudget. The store holds this one connection only.
  absl::Status Ready() override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (PQstatus(conn_) == CONNECTION_OK) return absl::OkStatus();
    const absl::Time start = absl::Now();
    absl::Duration delay = kFirstReconnectDelay;
    for (int attempt = 1;; ++attempt) {
      PQreset(conn_);
      if (PQstatus(conn_) == CONNECTION_OK) {
        LogInfo("store_reconnected",
                {{"attempts", absl::StrCat(attempt)},
                 {"after_ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
        return absl::OkStatus();
      }
      std::string error = PQerrorMessage(conn_);
      while (!error.empty() && error.back() == '\n') error.pop_back();
      if (absl::Now() - start + delay > kReconnectBudget) {
        LogError("store_unavailable", {{"attempts", absl::StrCat(attempt)}, {"error", error}});
        return absl::UnavailableError(
            absl::StrCat("result store: PostgreSQL connection lost: ", error));
      }
      LogWarning("store_reconnecting",
                 {{"attempt", absl::StrCat(attempt)},
                  {"retry_in_ms", absl::StrCat(absl::ToInt64Milliseconds(delay))},
                  {"error", error}});
      absl::SleepFor(delay);
      delay = std::min(delay * 2, kMaxReconnectDelay);
    }
  }

  // A statement outside a transaction is atomic on its own, and every one this store runs
  // that way is idempotent (reads, upserts of a whole row, lease renewals): after a lost
  // connection it is re-run on the new one. Inside a transaction, InTransaction re-runs the
  // whole transaction instead.
  absl::StatusOr<Result> Query(const std::string& sql, const std::vector<Param>& params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const PGTransactionStatusType before = PQtransactionStatus(conn_);
    const bool outside_transaction = before == PQTRANS_IDLE || before == PQTRANS_UNKNOWN;
    for (;;) {
      absl::StatusOr<Result> r = QueryOnce(sql, params);
      if (r.ok() || !outside_transaction || !ConnectionLost(r.status())) return r;
      if (absl::Status s = Ready(); !s.ok()) return s;
    }
  }

  // Whether `s` came from a broken connection (then Ready() re-opens it).
  bool ConnectionLost(const absl::Status& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return absl::IsUnavailable(s) && PQstatus(conn_) != CONNECTION_OK;
  }

  // Runs a statement once; results come back in binary format.
  absl::StatusOr<Result> QueryOnce(const std::string& sql, const std::vector<Param>& params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<const char*> values;
    std::vector<int> lengths, formats;
    for (const Param& p : params) {
      values.push_back(p.value.data());
      lengths.push_back(static_cast<int>(p.value.size()));
      formats.push_back(p.binary ? 1 : 0);
    }
    Result r(PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                          values.data(), lengths.data(), formats.data(), /*resultFormat=*/1));
    const ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
    const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    const std::string sqlstate = state ? state : "";
    const std::string message =
        absl::StrCat("result store: ", r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_));
    // Connection exceptions, and the server shutting down or starting up (57P01-57P03).
    if (PQstatus(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 ||
        sqlstate.rfind("57P0", 0) == 0) {
      return absl::UnavailableError(message);
    }
    // Data corrupted / index corrupted: the wire contract's code for unrecoverable data.
    if (sqlstate == "XX001" || sqlstate == "XX002") return absl::DataLossError(message);
    // Serialization failure / deadlock: the transaction is retried.
    if (sqlstate == "40001" || sqlstate == "40P01") return absl::AbortedError(message);
    return absl::InternalError(message);
  }

  // Runs `body` in a transaction, committed when it returns OK and rolled back otherwise;
  // retried (a few times) when the database aborted it for a conflict with another server,
  // and re-run on a new connection when the connection was lost (the database rolled it
  // back; a COMMIT whose reply was lost may have committed: see docs/service.md).
  absl::Status InTransaction(const std::function<absl::Status()>& body) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::Status s;
    int reconnects = 0;
    for (int attempt = 0; attempt < 4;) {
      if (s = Ready(); !s.ok()) return s;
      s = Query("BEGIN", {}).status();
      if (s.ok()) s = body();
      if (s.ok()) s = Query("COMMIT", {}).status();
      if (s.ok()) return s;
      if (ConnectionLost(s) && ++reconnects <= kMaxTransactionReconnects) continue;
      if (PQtransactionStatus(conn_) != PQTRANS_IDLE) Query("ROLLBACK", {}).IgnoreError();
      if (!absl::IsAborted(s)) return s;
      ++attempt;
    }
    return s;
  }

  absl::StatusOr<std::vector<StoredSeries>> SelectSeries(const std::string& sql,
                                                         const std::vector<Param>& params) {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Ready(); !s.ok()) return s;
    absl::StatusOr<Result> r = Query(sql, params);
    if (!r.ok()) return r.status();
    std::vector<StoredSeries> rows;
    rows.reserve(PQntuples(r->get()));
    for (int row = 0; row < PQntuples(r->get()); ++row) {
      rows.push_back({GetBytes(*r, row, 0), GetInt(*r, row, 1), GetBytes(*r, row, 2)});
    }
    return rows;
  }

  absl::StatusOr<std::vector<StoredJob>> SelectJobs(const std::string& sql,
                                                    const std::vector<Param>& params) {
    absl::MutexLock lock(&mu_);
    if (absl::Status s = Ready(); !s.ok()) return s;
    absl::StatusOr<Result> r = Query(sql, params);
    if (!r.ok()) return r.status();
    std::vector<StoredJob> jobs;
    jobs.reserve(PQntuples(r->get()));
    for (int row = 0; row < PQntuples(r->get()); ++row) jobs.push_back(ReadJob(*r, row));
    return jobs;
  }

  absl::Status WriteJob(const StoredJob& job) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Query(
               "INSERT INTO jobs (id, state, created_at, job) VALUES ($1, $2, $3, $4)"
               " ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, job = EXCLUDED.job",
               {Text(job.id), Int(job.state), Int(job.created_at), Bytes(job.blob)})
        .status();
  }

  absl::StatusOr<std::optional<StoredJob>> ReadJobRow(const std::string& id, bool lock_row) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StatusOr<Result> r =
        Query(absl::StrCat("SELECT ", kJobColumns, " FROM jobs WHERE id = $1",
                           lock_row ? " FOR UPDATE" : ""),
              {Text(id)});
    if (!r.ok()) return r.status();
    if (PQntuples(r->get()) == 0) return std::optional<StoredJob>();
    return std::optional<StoredJob>(ReadJob(*r, 0));
  }

  absl::Status InsertShards(const std::string& job_id, int shards) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Query(
               "INSERT INTO job_shards (job_id, shard) SELECT $1, generate_series(0, $2 - 1)"
               " ON CONFLICT DO NOTHING",
               {Text(job_id), Int(shards)})
        .status();
  }

  absl::StatusOr<bool> MarkShardDone(const std::string& job_id, int index, const std::string& owner,
                                     const std::string& result,
                                     const ShardProgress& progress) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StatusOr<Result> r = Query(
        "UPDATE job_shards SET state = $1, result = $2, lease_until = 0, requests_total = $7,"
        " requests_done = $8, requests_cached = $9"
        " WHERE job_id = $3 AND shard = $4 AND owner = $5 AND state = $6",
        {Int(kShardDone), Bytes(result), Text(job_id), Int(index), Text(owner), Int(kShardRunning),
         Int(progress.requests_total), Int(progress.requests_done), Int(progress.requests_cached)});
    if (!r.ok()) return r.status();
    return std::strcmp(PQcmdTuples(r->get()), "0") != 0;
  }

  absl::StatusOr<std::vector<JobShard>> ReadShards(const std::string& job_id) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StatusOr<Result> r = Query(
        absl::StrCat("SELECT ", kShardColumns, " FROM job_shards WHERE job_id = $1 ORDER BY shard"),
        {Text(job_id)});
    if (!r.ok()) return r.status();
    std::vector<JobShard> shards;
    shards.reserve(PQntuples(r->get()));
    for (int row = 0; row < PQntuples(r->get()); ++row) shards.push_back(ReadShard(*r, row));
    return shards;
  }

  PGconn* conn_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<ResultStore>> OpenPostgresResultStore(const std::string& uri) {
  PGconn* conn = PQconnectdb(uri.c_str());
  if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
    std::string message = conn ? PQerrorMessage(conn) : "out of memory";
    PQfinish(conn);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return absl::UnavailableError(absl::StrCat("cannot connect to the PostgreSQL result store ",
                                               RedactedStoreSpec(uri), ": ", message));
  }
  // CREATE ... IF NOT EXISTS notices would go to stderr.
  PQsetNoticeProcessor(
      conn, [](void*, const char*) {}, nullptr);
  auto store = std::make_unique<PostgresResultStore>(conn);
  if (absl::Status s = store->CreateSchema(); !s.ok()) return s;
  return store;
}

}  // namespace hgeval::server
