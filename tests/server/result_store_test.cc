// The SQLite result store: lookups, recomputation counts, jobs, persistence.
#include "server/result_store.h"

#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {

StoreKey Key(const std::string& digest, const std::string& model = "m") {
  return StoreKey{model, "t", "loglikelihood", digest};
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
