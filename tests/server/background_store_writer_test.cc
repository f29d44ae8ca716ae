// BackgroundStoreWriter: rows handed over batch by batch are all stored, in order, by the
// time Finish returns.
#include "server/store/background_store_writer.h"

#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {

StoreKey Key(int i) { return StoreKey{"m", "t", "loglikelihood", "digest-" + std::to_string(i)}; }

TEST(BackgroundStoreWriterTest, EveryBatchIsStoredInOrderByFinish) {
  const std::string path = hgeval::testing::MakeTempDir("writer") + "/s.sqlite";
  auto store = ResultStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  BackgroundStoreWriter writer(store->get());
  std::vector<StoreKey> keys;
  for (int batch = 0; batch < 50; ++batch) {
    BackgroundStoreWriter::Rows rows;
    for (int i = 0; i < 20; ++i) {
      keys.push_back(Key(batch * 20 + i));
      rows.emplace_back(keys.back(), "v" + std::to_string(batch * 20 + i));
    }
    ASSERT_TRUE(writer.Put(std::move(rows)).ok());
  }
  // The same key again, later: the later response is the one kept.
  ASSERT_TRUE(writer.Put({{Key(7), "rewritten"}}).ok());
  ASSERT_TRUE(writer.Finish().ok());
  auto got = (*store)->GetMany(keys);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE((*got)[i].has_value()) << i;
    EXPECT_EQ(*(*got)[i], i == 7 ? "rewritten" : "v" + std::to_string(i));
  }
  EXPECT_GT(writer.seconds(), 0.0);
}

}  // namespace
}  // namespace hgeval::server
