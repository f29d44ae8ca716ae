// The SQLite result store: lookups, recomputation counts, jobs, persistence.
#include "server/result_store.h"

#include <sqlite3.h>

#include "gtest/gtest.h"
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

TEST(ResultStoreTest, UnopenablePathIsAnError) {
  auto store = ResultStore::Open("/nonexistent-dir/x/y.sqlite");
  EXPECT_FALSE(store.ok());
}

}  // namespace
}  // namespace hgeval::server
