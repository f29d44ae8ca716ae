// The SQLite result store: lookups, recomputation counts, jobs, persistence.
#include "server/store/result_store.h"

#include <sqlite3.h>

#include <cstdio>

#include "gtest/gtest.h"
#include "server/store/sqlite_result_store.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {

StoreKey Key(const std::string& digest, const std::string& model = "m") {
  return StoreKey{model, "t", "loglikelihood", digest};
}

// Runs one SQL statement on the file behind the store's back (as bit rot or an older
// version would have left it).
void ExecRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

// One flipped byte in a stored response (the store's own integrity_check passes: the
// page is well-formed) used to be served as a valid cached result. The row's checksum
// catches it: the result is reported absent, counted, and a rewrite heals it.
TEST(ResultStoreTest, ARowWithAFlippedByteIsNotServed) {
  const std::string path = hgeval::testing::MakeTempDir("store") + "/s.sqlite";
  const std::string response("\x09\x00\x00\x00\x00\x00\x00\xf0\xbf", 9);  // -1.0 as a double
  {
    auto store = ResultStore::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->PutMany({{Key("a"), response}, {Key("b"), "rb"}}).ok());
  }
  // Flip the lowest bit of the double's top byte: -1.0 becomes -1.0000000000000002.
  ExecRaw(path,
          "UPDATE results SET response = substr(response, 1, 8) || x'be' "
          "WHERE request_digest = 'a'");
  auto store = ResultStore::Open(path);
  ASSERT_TRUE(store.ok());
  auto got = (*store)->GetMany({Key("a"), Key("b")});
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE((*got)[0].has_value());
  EXPECT_EQ((*got)[1].value_or(""), "rb");
  EXPECT_EQ((*store)->damaged_rows(), 1);
  ASSERT_TRUE((*store)->PutMany({{Key("a"), response}}).ok());  // recomputed
  EXPECT_EQ((*(*store)->GetMany({Key("a")}))[0].value_or(""), response);
}

// A store from before checksums: the column is added, its rows (unverifiable) are
// recomputed rather than served, and rewritten rows are served again.
TEST(ResultStoreTest, RowsFromAStoreWithoutChecksumsAreRecomputed) {
  const std::string path = hgeval::testing::MakeTempDir("store") + "/s.sqlite";
  ExecRaw(path,
          "CREATE TABLE results (model_hash TEXT NOT NULL, tokenizer_hash TEXT NOT NULL,"
          " kind TEXT NOT NULL, request_digest TEXT NOT NULL, response BLOB NOT NULL,"
          " compute_count INTEGER NOT NULL DEFAULT 1, created_at INTEGER NOT NULL,"
          " PRIMARY KEY (model_hash, tokenizer_hash, kind, request_digest)) WITHOUT ROWID;"
          "INSERT INTO results VALUES ('m', 't', 'loglikelihood', 'old', x'01', 1, 0);");
  auto store = ResultStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_FALSE((*(*store)->GetMany({Key("old")}))[0].has_value());
  EXPECT_EQ((*store)->damaged_rows(), 0);
  ASSERT_TRUE((*store)->PutMany({{Key("old"), "new"}}).ok());
  EXPECT_EQ((*(*store)->GetMany({Key("old")}))[0].value_or(""), "new");
}

TEST(ResultStoreTest, PutGetAndComputeCounts) {
  const std::string path = hgeval::testing::MakeTempDir("store") + "/s.sqlite";
  auto store = ResultStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutMany({{Key("a"), "ra"}, {Key("b"), "rb"}}).ok());
  auto got = (*store)->GetMany({Key("a"), Key("c"), Key("b"), Key("a", "other-model")});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)[0].value_or(""), "ra");
  EXPECT_FALSE((*got)[1].has_value());
  EXPECT_EQ((*got)[2].value_or(""), "rb");
  EXPECT_FALSE((*got)[3].has_value());  // keyed by model hash too
  auto stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->results, 2);
  EXPECT_EQ(stats->max_compute_count, 1);
  ASSERT_TRUE((*store)->PutMany({{Key("a"), "ra2"}}).ok());
  stats = (*store)->Stats();
  EXPECT_EQ(stats->results, 2);
  EXPECT_EQ(stats->computations, 3);
  EXPECT_EQ(stats->max_compute_count, 2);
  EXPECT_EQ((*(*store)->GetMany({Key("a")}))[0].value_or(""), "ra2");
}

TEST(ResultStoreTest, SurvivesReopenAndKeepsJobs) {
  const std::string path = hgeval::testing::MakeTempDir("store") + "/s.sqlite";
  {
    auto store = ResultStore::Open(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->PutMany({{Key("x"), std::string("\0\1\2", 3)}}).ok());
    ASSERT_TRUE((*store)->PutJob({"job-1", 2, 100, "blob1"}).ok());
    ASSERT_TRUE((*store)->PutJob({"job-2", 3, 200, "blob2"}).ok());
    ASSERT_TRUE((*store)->PutJob({"job-1", 1, 100, "blob1b"}).ok());
  }
  auto store = ResultStore::Open(path);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*(*store)->GetMany({Key("x")}))[0].value_or(""), std::string("\0\1\2", 3));
  auto job = (*store)->GetJob("job-1");
  ASSERT_TRUE(job.ok() && job->has_value());
  EXPECT_EQ((*job)->blob, "blob1b");
  EXPECT_EQ((*job)->state, 1);
  EXPECT_FALSE((*(*store)->GetJob("nope")).has_value());
  auto list = (*store)->ListJobs(10);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, "job-2");  // newest first
  auto unfinished = (*store)->JobsInStates({1, 2});
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 1u);
  EXPECT_EQ((*unfinished)[0].id, "job-1");
}

// The store file deleted, or replaced by another file, while the server runs (issue 29
// item 7): nothing noticed, and every job accepted afterwards was gone at the next start.
// The next write is refused with UNAVAILABLE naming what happened.
TEST(ResultStoreTest, ADeletedStoreFileIsReportedOnTheNextWrite) {
  const std::string path = hgeval::testing::MakeTempDir("store-deleted") + "/store.sqlite";
  auto store = ResultStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  const StoreKey key{"m", "t", "loglikelihood", "d"};
  ASSERT_TRUE((*store)->PutMany({{key, "one"}}).ok());
  ASSERT_EQ(std::remove(path.c_str()), 0);
  absl::Status put = (*store)->PutMany({{key, "two"}});
  EXPECT_EQ(put.code(), absl::StatusCode::kUnavailable) << put;
  EXPECT_NE(put.message().find("was deleted or moved"), std::string::npos) << put;
  EXPECT_EQ(put.message().find("damaged"), std::string::npos) << put;
  StoredJob job;
  job.id = "job-1";
  job.blob = "spec";
  EXPECT_EQ((*store)->CreateJob(job, 1).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*store)->PutJob(job).code(), absl::StatusCode::kUnavailable);
}

TEST(ResultStoreTest, AReplacedStoreFileIsReportedOnTheNextWrite) {
  const std::string dir = hgeval::testing::MakeTempDir("store-replaced");
  auto store = ResultStore::Open(dir + "/store.sqlite");
  ASSERT_TRUE(store.ok()) << store.status();
  {
    auto other = ResultStore::Open(dir + "/other.sqlite");
    ASSERT_TRUE(other.ok()) << other.status();
  }
  ASSERT_EQ(std::rename((dir + "/other.sqlite").c_str(), (dir + "/store.sqlite").c_str()), 0);
  absl::Status put = (*store)->PutMany({{StoreKey{"m", "t", "loglikelihood", "d"}, "one"}});
  EXPECT_EQ(put.code(), absl::StatusCode::kUnavailable) << put;
  EXPECT_NE(put.message().find("was replaced by another file"), std::string::npos) << put;
}

// SQLite's own failures get the diagnosis their cause calls for: a full disk is
// RESOURCE_EXHAUSTED (it used to be INTERNAL), a read-only file UNAVAILABLE saying the
// file is not damaged (it used to be diagnosed as damaged, with advice to move it aside).
// The codes come from a real connection: PRAGMA max_page_count fills the "disk",
// PRAGMA query_only makes it read-only.
TEST(ResultStoreTest, SqliteFailuresAreDiagnosedByTheirCause) {
  const std::string path = hgeval::testing::MakeTempDir("store-codes") + "/raw.sqlite";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (b BLOB)", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA max_page_count=3", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "INSERT INTO t VALUES (zeroblob(100000))", nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_errcode(db), SQLITE_FULL);
  const absl::Status full =
      SqliteStatus(sqlite3_extended_errcode(db), "insert", sqlite3_errmsg(db));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("disk holding the result store is full"), std::string::npos);

  ASSERT_EQ(sqlite3_exec(db, "PRAGMA query_only=1", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "INSERT INTO t VALUES (1)", nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_errcode(db), SQLITE_READONLY);
  const absl::Status read_only =
      SqliteStatus(sqlite3_extended_errcode(db), "insert", sqlite3_errmsg(db));
  EXPECT_EQ(read_only.code(), absl::StatusCode::kUnavailable) << read_only;
  EXPECT_NE(read_only.message().find("read-only: the file is not damaged"), std::string::npos)
      << read_only;
  sqlite3_close(db);

  EXPECT_EQ(SqliteStatus(SQLITE_CORRUPT, "select", "malformed").code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(SqliteStatus(SQLITE_READONLY_DBMOVED, "insert", "moved").code(),
            absl::StatusCode::kUnavailable);
}

TEST(ResultStoreTest, UnopenablePathIsAnError) {
  auto store = ResultStore::Open("/nonexistent-dir/x/y.sqlite");
  EXPECT_FALSE(store.ok());
}

}  // namespace
}  // namespace hgeval::server
