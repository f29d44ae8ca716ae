// The result store contract, run on both backends: SQLite (a temp file) and PostgreSQL (a
// real server from Debian's postgresql package, started by the test; the PostgreSQL cases
// skip with a message where it is not installed). Two store objects on one database stand
// for two servers sharing it.
#include <libpq-fe.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/store/result_store.h"
#include "tests/server/postgres_process.h"
#include "tests/server/tcp_drop_proxy.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {

using testing::PostgresProcess;

// One PostgreSQL server for the whole suite (initdb costs a second or two), stopped at
// exit; each test gets its own database.
PostgresProcess& SharedPostgres() {
  static PostgresProcess server;
  static const absl::Status started = server.Start(hgeval::testing::MakeTempDir("store-pg"));
  EXPECT_TRUE(started.ok()) << started;
  return server;
}

class StoreBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      spec_ = hgeval::testing::MakeTempDir("store-backend") + "/s.sqlite";
      return;
    }
    if (PostgresProcess::FindBinDir().empty()) GTEST_SKIP() << PostgresProcess::kMissingMessage;
    static std::atomic<int> next{0};
    absl::StatusOr<std::string> uri =
        SharedPostgres().CreateDatabase(absl::StrCat("t", getpid(), "_", next++));
    ASSERT_TRUE(uri.ok()) << uri.status();
    spec_ = *uri;
  }

  // A store object, as one server would open it.
  std::unique_ptr<ResultStore> OpenStore() {
    absl::StatusOr<std::unique_ptr<ResultStore>> store = ResultStore::Open(spec_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // One SQL statement behind the store's back (bit rot).
  void ExecRaw(const std::string& sql) {
    if (GetParam() == "sqlite") {
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open(spec_.c_str(), &db), SQLITE_OK);
      ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
      return;
    }
    PGconn* conn = PQconnectdb(spec_.c_str());
    PGresult* r = PQexec(conn, sql.c_str());
    EXPECT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
    PQclear(r);
    PQfinish(conn);
  }

  std::string spec_;
};

StoreKey Key(const std::string& digest) { return StoreKey{"m", "t", "loglikelihood", digest}; }

StoredJob Job(const std::string& id, int64_t created_at, int state = 1) {
  return StoredJob{id, state, created_at, "blob-" + id};
}

const std::vector<int> kRunnable = {1, 2};

TEST_P(StoreBackendTest, ResultsRoundTripWithComputeCounts) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EXPECT_STREQ(store->backend(), GetParam().c_str());
  const std::string binary("\x00\xff\x01zero-byte", 12);
  ASSERT_TRUE(store->PutMany({{Key("a"), binary}, {Key("b"), "rb"}}).ok());
  auto got =
      store->GetMany({Key("a"), Key("c"), Key("b"), StoreKey{"m2", "t", "loglikelihood", "a"}});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0].value_or("?"), binary);
  EXPECT_FALSE((*got)[1].has_value());
  EXPECT_EQ((*got)[2].value_or("?"), "rb");
  EXPECT_FALSE((*got)[3].has_value());  // another model's key
  ASSERT_TRUE(store->PutMany({{Key("a"), "newer"}}).ok());
  EXPECT_EQ((*store->GetMany({Key("a")}))[0].value_or("?"), "newer");
  auto stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->results, 2);
  EXPECT_EQ(stats->computations, 3);
  EXPECT_EQ(stats->max_compute_count, 2);
}

TEST_P(StoreBackendTest, ARowWithABadChecksumIsNotServed) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutMany({{Key("a"), "ra"}, {Key("b"), "rb"}}).ok());
  ExecRaw(
      "UPDATE results SET checksum = '00000000000000000000000000000000' "
      "WHERE request_digest = 'a'");
  auto got = store->GetMany({Key("a"), Key("b")});
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE((*got)[0].has_value());
  EXPECT_EQ((*got)[1].value_or("?"), "rb");
  EXPECT_EQ(store->damaged_rows(), 1);
}

// Two servers computing the same requests at once (in different orders) keep one row per
// request; the compute counts show both computations, and neither write fails.
TEST_P(StoreBackendTest, TwoServersWritingTheSameRequestsKeepOneRowEach) {
  auto a = OpenStore(), b = OpenStore();
  ASSERT_TRUE(a && b);
  std::vector<std::pair<StoreKey, std::string>> entries;
  for (int i = 0; i < 300; ++i)
    entries.push_back({Key(absl::StrCat("k", i)), absl::StrCat("v", i)});
  auto reversed = entries;
  std::reverse(reversed.begin(), reversed.end());
  absl::Status sa, sb;
  std::thread ta([&] {
    for (int round = 0; round < 3; ++round) sa.Update(a->PutMany(entries));
  });
  std::thread tb([&] {
    for (int round = 0; round < 3; ++round) sb.Update(b->PutMany(reversed));
  });
  ta.join();
  tb.join();
  EXPECT_TRUE(sa.ok()) << sa;
  EXPECT_TRUE(sb.ok()) << sb;
  auto stats = a->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->results, 300);
  EXPECT_EQ(stats->computations, 300 * 6);
}

TEST_P(StoreBackendTest, JobsAreListedAndFoundByState) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateJob(Job("j1", 10), 2).ok());
  ASSERT_TRUE(store->CreateJob(Job("j2", 20), 1).ok());
  ASSERT_TRUE(store->PutJob(Job("j3", 30, /*state=*/3)).ok());
  auto listed = store->ListJobs(10);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].id, "j3");  // newest first
  EXPECT_EQ((*listed)[2].blob, "blob-j1");
  auto unfinished = store->JobsInStates(kRunnable);
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 2u);
  EXPECT_EQ((*unfinished)[0].id, "j1");  // oldest first
  auto shards = store->JobShards("j1");
  ASSERT_TRUE(shards.ok());
  ASSERT_EQ(shards->size(), 2u);
  EXPECT_EQ((*shards)[1].index, 1);
  EXPECT_EQ((*shards)[1].state, kShardQueued);
  // EnsureShards adds only what is missing.
  ASSERT_TRUE(store->EnsureShards("j1", 3).ok());
  EXPECT_EQ(store->JobShards("j1")->size(), 3u);
  EXPECT_FALSE(store->GetJob("nope")->has_value());
  EXPECT_EQ(store->UpdateJob("nope", nullptr).code(), absl::StatusCode::kNotFound);
}

// Replicas claiming at the same time take every shard exactly once, oldest job first.
TEST_P(StoreBackendTest, ConcurrentClaimsTakeEachShardOnce) {
  auto a = OpenStore(), b = OpenStore();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->CreateJob(Job("old", 1), 12).ok());
  ASSERT_TRUE(a->CreateJob(Job("new", 2), 12).ok());
  absl::Mutex mu;
  std::vector<std::pair<std::string, int>> claimed;
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    ResultStore* store = t % 2 ? a.get() : b.get();
    threads.emplace_back([&, store, t] {
      for (;;) {
        auto c = store->ClaimShard(absl::StrCat("r", t), 60000, kRunnable);
        ASSERT_TRUE(c.ok()) << c.status();
        if (!c->has_value()) return;
        EXPECT_EQ((*c)->shard.state, kShardRunning);
        EXPECT_EQ((*c)->shard.attempts, 1);
        EXPECT_EQ((*c)->job.blob, "blob-" + (*c)->job.id);
        absl::MutexLock lock(&mu);
        claimed.push_back({(*c)->job.id, (*c)->shard.index});
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::pair<std::string, int>> distinct(claimed.begin(), claimed.end());
  EXPECT_EQ(claimed.size(), 24u);
  EXPECT_EQ(distinct.size(), 24u);
}

// A claimer that stops renewing loses the shard once its lease runs out: another replica
// claims it (attempt 2), and the first can neither renew nor finish it.
TEST_P(StoreBackendTest, AnExpiredLeaseIsTakenOver) {
  auto a = OpenStore(), b = OpenStore();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->CreateJob(Job("j", 1), 2).ok());
  auto first = a->ClaimShard("dead", 300, kRunnable);
  ASSERT_TRUE(first.ok() && first->has_value());
  auto second = b->ClaimShard("alive", 60000, kRunnable);
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_NE((*first)->shard.index, (*second)->shard.index);
  EXPECT_FALSE(b->ClaimShard("alive", 60000, kRunnable)->has_value());  // both held
  // Renewing keeps the live one's lease and records progress.
  auto renewed = b->RenewShard("j", (*second)->shard.index, "alive", 60000, {10, 4, 1});
  ASSERT_TRUE(renewed.ok() && renewed->has_value());
  EXPECT_EQ(**renewed, 1);  // the job's state
  absl::SleepFor(absl::Milliseconds(500));
  auto taken = b->ClaimShard("alive", 60000, kRunnable);
  ASSERT_TRUE(taken.ok() && taken->has_value());
  EXPECT_EQ((*taken)->shard.index, (*first)->shard.index);
  EXPECT_EQ((*taken)->shard.attempts, 2);
  EXPECT_FALSE(a->RenewShard("j", (*first)->shard.index, "dead", 300, {})->has_value());
  auto finished = a->FinishShard("j", (*first)->shard.index, "dead", "late", {10, 10, 0},
                                 [](const StoredJob&, const std::vector<JobShard>&) {
                                   return absl::StatusOr<std::optional<StoredJob>>(std::nullopt);
                                 });
  ASSERT_TRUE(finished.ok());
  EXPECT_FALSE(*finished);
  auto shards = b->JobShards("j");
  ASSERT_TRUE(shards.ok());
  EXPECT_EQ((*shards)[(*second)->shard.index].requests_total, 10);
  EXPECT_EQ((*shards)[(*second)->shard.index].requests_done, 4);
  EXPECT_EQ((*shards)[(*first)->shard.index].owner, "alive");
}

// A finished shard's row keeps its final progress, not that of its last renewal (the
// columns used to stay where the heartbeat left them: 4 of 10, or 0 for a shard that
// finished within one heartbeat).
TEST_P(StoreBackendTest, AFinishedShardRowHoldsItsFinalProgress) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateJob(Job("j", 1), 2).ok());
  auto first = store->ClaimShard("r", 60000, kRunnable);
  auto second = store->ClaimShard("r", 60000, kRunnable);
  ASSERT_TRUE(first.ok() && first->has_value() && second.ok() && second->has_value());
  const int renewed = (*first)->shard.index, quick = (*second)->shard.index;
  ASSERT_TRUE(store->RenewShard("j", renewed, "r", 60000, {10, 4, 1}).ok());
  auto keep = [](const StoredJob&, const std::vector<JobShard>&) {
    return absl::StatusOr<std::optional<StoredJob>>(std::nullopt);
  };
  ASSERT_TRUE(*store->FinishShard("j", renewed, "r", "a", {10, 10, 3}, keep));
  ASSERT_TRUE(*store->FinishShard("j", quick, "r", "b", {7, 7, 7}, keep));
  auto shards = store->JobShards("j");
  ASSERT_TRUE(shards.ok()) << shards.status();
  const JobShard& a = (*shards)[renewed];
  const JobShard& b = (*shards)[quick];
  EXPECT_EQ(a.state, kShardDone);
  EXPECT_EQ(a.requests_total, 10);
  EXPECT_EQ(a.requests_done, 10);
  EXPECT_EQ(a.requests_cached, 3);
  EXPECT_EQ(b.requests_total, 7);
  EXPECT_EQ(b.requests_done, 7);
  EXPECT_EQ(b.requests_cached, 7);
}

// Replicas finishing a job's shards at the same time: exactly one sees every shard done
// and writes the job row, and it sees every outcome.
TEST_P(StoreBackendTest, ExactlyOneReplicaFinishesTheJob) {
  auto a = OpenStore(), b = OpenStore();
  ASSERT_TRUE(a && b);
  constexpr int kShards = 8;
  ASSERT_TRUE(a->CreateJob(Job("j", 1), kShards).ok());
  std::vector<ClaimedShard> claims;
  for (int i = 0; i < kShards; ++i) {
    auto c = (i % 2 ? a : b)->ClaimShard(i % 2 ? "ra" : "rb", 60000, kRunnable);
    ASSERT_TRUE(c.ok() && c->has_value());
    claims.push_back(**c);
  }
  std::atomic<int> finishers{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kShards; ++i) {
    threads.emplace_back([&, i] {
      const ClaimedShard& c = claims[i];
      auto owned = (i % 2 ? a : b)
                       ->FinishShard("j", c.shard.index, c.shard.owner,
                                     absl::StrCat("outcome", c.shard.index), {},
                                     [&](const StoredJob& job, const std::vector<JobShard>& shards)
                                         -> absl::StatusOr<std::optional<StoredJob>> {
                                       for (const JobShard& s : shards) {
                                         if (s.state != kShardDone) return std::nullopt;
                                       }
                                       ++finishers;
                                       std::string all;
                                       for (const JobShard& s : shards) all += s.result + ";";
                                       StoredJob done = job;
                                       done.state = 3;
                                       done.blob = all;
                                       return std::optional<StoredJob>(done);
                                     });
      ASSERT_TRUE(owned.ok()) << owned.status();
      EXPECT_TRUE(*owned);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(finishers.load(), 1);
  auto job = a->GetJob("j");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->state, 3);
  EXPECT_EQ((*job)->blob,
            "outcome0;outcome1;outcome2;outcome3;outcome4;outcome5;outcome6;outcome7;");
  EXPECT_FALSE(b->ClaimShard("rb", 60000, kRunnable)->has_value());
}

// A stopping (or restarted) server puts its shards back at once; a cancelled job's shards
// are not claimed.
TEST_P(StoreBackendTest, ReleasedShardsAreClaimedAgainAndCancelledJobsAreNot) {
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->CreateJob(Job("j", 1), 1).ok());
  ASSERT_TRUE(store->ClaimShard("r1", 60000, kRunnable)->has_value());
  EXPECT_FALSE(store->ClaimShard("r2", 60000, kRunnable)->has_value());
  ASSERT_TRUE(store->ReleaseShards("r1").ok());
  auto again = store->ClaimShard("r2", 60000, kRunnable);
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->shard.attempts, 2);
  ASSERT_TRUE(store->ReleaseShards("r2").ok());
  ASSERT_TRUE(store
                  ->UpdateJob("j",
                              [](const StoredJob& job, const std::vector<JobShard>& shards)
                                  -> absl::StatusOr<std::optional<StoredJob>> {
                                EXPECT_EQ(shards.size(), 1u);
                                StoredJob cancelled = job;
                                cancelled.state = 5;
                                return std::optional<StoredJob>(cancelled);
                              })
                  .ok());
  EXPECT_FALSE(store->ClaimShard("r2", 60000, kRunnable)->has_value());
  // An error from the change is returned and nothing is written.
  EXPECT_EQ(
      store
          ->UpdateJob("j",
                      [](const StoredJob&,
                         const std::vector<JobShard>&) -> absl::StatusOr<std::optional<StoredJob>> {
                        return absl::FailedPreconditionError("finished");
                      })
          .code(),
      absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*store->GetJob("j"))->state, 5);
}

// A store written by a version before checksums and shards (its results rows have no
// checksum column, its jobs no shards) is migrated at open: the column and the shards
// table are added, old rows are recomputed rather than served, old jobs gain shards.
TEST_P(StoreBackendTest, AStoreFromBeforeChecksumsAndShardsIsMigrated) {
  const std::string blob = GetParam() == "sqlite" ? "BLOB" : "BYTEA";
  const std::string bytes = GetParam() == "sqlite" ? "x'00'" : "'\\x00'::bytea";
  ExecRaw(
      "CREATE TABLE results (model_hash TEXT NOT NULL, tokenizer_hash TEXT NOT NULL,"
      " kind TEXT NOT NULL, request_digest TEXT NOT NULL, response " +
      blob +
      " NOT NULL,"
      " compute_count BIGINT NOT NULL DEFAULT 1, created_at BIGINT NOT NULL,"
      " PRIMARY KEY (model_hash, tokenizer_hash, kind, request_digest))");
  ExecRaw(
      "CREATE TABLE jobs (id TEXT PRIMARY KEY, state BIGINT NOT NULL,"
      " created_at BIGINT NOT NULL, job " +
      blob + " NOT NULL)");
  ExecRaw("INSERT INTO results VALUES ('m', 't', 'loglikelihood', 'old', " + bytes + ", 1, 0)");
  ExecRaw("INSERT INTO jobs VALUES ('j-old', 1, 5, " + bytes + ")");
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto got = store->GetMany({Key("old")});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_FALSE((*got)[0].has_value());  // unverifiable: recomputed
  ASSERT_TRUE(store->PutMany({{Key("old"), "new"}}).ok());
  EXPECT_EQ((*store->GetMany({Key("old")}))[0].value_or("?"), "new");
  EXPECT_EQ(store->Stats()->max_compute_count, 2);
  ASSERT_TRUE(store->EnsureShards("j-old", 2).ok());
  auto claimed = store->ClaimShard("r", 60000, kRunnable);
  ASSERT_TRUE(claimed.ok() && claimed->has_value()) << claimed.status();
  EXPECT_EQ((*claimed)->job.id, "j-old");
  // Opening again (another server starting) changes nothing.
  auto again = OpenStore();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->JobShards("j-old")->size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreBackendTest, ::testing::Values("sqlite", "postgresql"),
                         [](const auto& info) { return info.param; });

// PostgreSQL restarted under an open store (fast shutdown: its session is ended): the next
// transaction and the next lone statement wait for it with backoff, run on a new
// connection, and count nothing twice.
TEST(PostgresReconnectTest, TransactionsAndStatementsSurviveARestart) {
  if (PostgresProcess::FindBinDir().empty()) GTEST_SKIP() << PostgresProcess::kMissingMessage;
  PostgresProcess postgres;
  ASSERT_TRUE(postgres.Start(hgeval::testing::MakeTempDir("store-pg-restart")).ok());
  auto store = ResultStore::Open(postgres.Uri());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutMany({{Key("a"), "ra"}}).ok());
  for (const char* step : {"transaction", "statement"}) {
    ASSERT_TRUE(postgres.StopFast().ok()) << step;
    std::thread restart([&] {
      absl::SleepFor(absl::Milliseconds(800));
      EXPECT_TRUE(postgres.Resume().ok());
    });
    if (std::string(step) == "transaction") {
      EXPECT_TRUE((*store)->PutMany({{Key("b"), "rb"}}).ok()) << step;
    } else {
      auto got = (*store)->GetMany({Key("a"), Key("b")});
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ((*got)[0].value_or("?"), "ra");
      EXPECT_EQ((*got)[1].value_or("?"), "rb");
    }
    restart.join();
  }
  auto stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->results, 2);
  EXPECT_EQ(stats->max_compute_count, 1);
}

// The drop a restart cannot aim: the connection lost after PostgreSQL committed a PutMany
// but before its reply came back. The store re-runs the write on a new connection, and
// the re-run must find it applied instead of counting every row computed twice.
TEST(PostgresReconnectTest, AWriteWhoseCommitReplyWasLostIsAppliedOnce) {
  if (PostgresProcess::FindBinDir().empty()) GTEST_SKIP() << PostgresProcess::kMissingMessage;
  PostgresProcess postgres;
  ASSERT_TRUE(postgres.Start(hgeval::testing::MakeTempDir("store-pg-lost-commit")).ok());
  hgeval::testing::TcpDropProxy proxy;
  ASSERT_TRUE(proxy.Start(postgres.port()).ok());
  auto store =
      ResultStore::Open(absl::StrCat("postgresql://hgeval@127.0.0.1:", proxy.port(), "/postgres"));
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutMany({{Key("a"), "ra"}}).ok());
  proxy.DropAfterNext("COMMIT");
  ASSERT_TRUE((*store)->PutMany({{Key("b"), "rb"}, {Key("c"), "rc"}}).ok());
  EXPECT_EQ(proxy.drops(), 1);
  auto got = (*store)->GetMany({Key("a"), Key("b"), Key("c")});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[1].value_or("?"), "rb");
  EXPECT_EQ((*got)[2].value_or("?"), "rc");
  auto stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->results, 3);
  EXPECT_EQ(stats->computations, 3);
  EXPECT_EQ(stats->max_compute_count, 1);
}

TEST(StoreSpecTest, PasswordsAreRedactedForLogs) {
  EXPECT_EQ(RedactedStoreSpec("postgresql://u:secret@db:5432/x"), "postgresql://u:***@db:5432/x");
  EXPECT_EQ(RedactedStoreSpec("postgres://db/x?user=u&password=secret&sslmode=require"),
            "postgres://db/x?user=u&password=***&sslmode=require");
  EXPECT_EQ(RedactedStoreSpec("postgresql://u@db/x"), "postgresql://u@db/x");
  EXPECT_EQ(RedactedStoreSpec("/data/store.sqlite"), "/data/store.sqlite");
}

TEST(StoreSpecTest, AnUnreachablePostgresIsUnavailableNamingTheStoreWithoutItsPassword) {
  auto store = ResultStore::Open("postgresql://u:secret@127.0.0.1:1/x?connect_timeout=2");
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(store.status().message().find("postgresql://u:***@127.0.0.1:1/x"), std::string::npos)
      << store.status();
  EXPECT_EQ(store.status().message().find("secret"), std::string::npos);
}

}  // namespace
}  // namespace hgeval::server
