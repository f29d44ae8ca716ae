// The decode attention's work plan and the KV-cache lineage it reads (host code; no GPU).
#include "engine/cuda/decode_attention_plan.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "engine/cuda/kv_lineage.h"
#include "gtest/gtest.h"

namespace hgeval::cuda {
namespace {

TEST(KvLineageTest, ForksShareExactlyTheirParentsPositionsBeforeTheForkPoint) {
  const KvLineage root = KvLineage::Fresh();
  const KvLineage a = root.ForkAt(1000);
  const KvLineage b = root.ForkAt(600);
  const KvLineage a2 = a.ForkAt(1500);  // a's positions [0, 1000) are root's
  // [0, x) is the same where the owner of position x - 1 is.
  EXPECT_EQ(a.PrefixOwner(1000), root.PrefixOwner(1000));
  EXPECT_EQ(b.PrefixOwner(600), root.PrefixOwner(600));
  EXPECT_EQ(a.PrefixOwner(600), b.PrefixOwner(600));
  EXPECT_NE(a.PrefixOwner(601), b.PrefixOwner(601));       // b wrote its own from 600
  EXPECT_NE(a.PrefixOwner(1001), root.PrefixOwner(1001));  // a wrote its own from 1000
  EXPECT_EQ(a2.PrefixOwner(1000), root.PrefixOwner(1000));
  EXPECT_EQ(a2.PrefixOwner(1500), a.PrefixOwner(1500));
  EXPECT_NE(a2.PrefixOwner(1501), a.PrefixOwner(1501));
  // A fork at 0 and a fresh cache share nothing with anyone.
  const KvLineage empty_fork = root.ForkAt(0);
  EXPECT_NE(empty_fork.PrefixOwner(1), root.PrefixOwner(1));
  EXPECT_NE(KvLineage::Fresh().PrefixOwner(1), KvLineage::Fresh().PrefixOwner(1));
  EXPECT_EQ(empty_fork.segments().size(), 1u);
  // A snapshot that writes nothing leaves no empty segment in its forks.
  const KvLineage snapshot = a.ForkAt(1200);
  const KvLineage cell = snapshot.ForkAt(1200);
  EXPECT_EQ(cell.segments().size(), 3u);  // root's [0, 1000), a's [1000, 1200), its own
  EXPECT_EQ(cell.PrefixOwner(1200), a.PrefixOwner(1200));
  EXPECT_EQ(KvLineage().PrefixOwner(5), 0u);
}

struct PlanCheck {
  int shared_items = 0;
  size_t items = 0;
};

// Every (row, window) exactly once; an item of several rows only over a full window whose
// end has one prefix owner in all of them.
PlanCheck CheckPlan(const std::vector<DecodeAttentionRow>& rows, int max_share) {
  std::vector<DecodeAttentionItem> items;
  PlanDecodeAttention(rows, max_share, &items);
  std::map<int, const DecodeAttentionRow*> by_row;
  for (const DecodeAttentionRow& r : rows) by_row[r.row] = &r;
  std::set<std::pair<int, int>> seen;
  PlanCheck check;
  check.items = items.size();
  for (const DecodeAttentionItem& item : items) {
    EXPECT_GE(item.count, 1);
    EXPECT_LE(item.count, std::max(1, max_share));
    if (item.count > 1) ++check.shared_items;
    const int64_t end = (static_cast<int64_t>(item.window) + 1) * kDecodeWindowKeys;
    for (int i = 0; i < item.count; ++i) {
      const DecodeAttentionRow& r = *by_row.at(item.rows[i]);
      EXPECT_LT(item.window, DecodeWindows(r.keys));
      EXPECT_TRUE(seen.insert({r.row, item.window}).second)
          << "row " << r.row << " window " << item.window << " twice";
      if (item.count > 1) {
        EXPECT_LE(end, r.keys) << "a shared window must be full";
        const DecodeAttentionRow& first = *by_row.at(item.rows[0]);
        EXPECT_EQ(r.lineage->PrefixOwner(end), first.lineage->PrefixOwner(end));
        EXPECT_NE(r.lineage->PrefixOwner(end), 0u);
      }
    }
  }
  size_t windows = 0;
  for (const DecodeAttentionRow& r : rows) windows += DecodeWindows(r.keys);
  EXPECT_EQ(seen.size(), windows) << "a window of some row is missing";
  return check;
}

TEST(DecodeAttentionPlanTest, NiahLikeForksShareTheirCommonWindowsOnly) {
  // A haystack cache, snapshots at insertion points (a batch in insertion order), each
  // cell a fork of its snapshot that appended its own prompt; plus an unrelated row and
  // a row with no lineage.
  const KvLineage haystack = KvLineage::Fresh();
  std::vector<KvLineage> cells;
  std::vector<int64_t> keys;
  for (int c = 0; c < 20; ++c) {
    const int64_t insertion = 3000 + 257 * c;
    cells.push_back(haystack.ForkAt(insertion).ForkAt(insertion));
    keys.push_back(insertion + 1000 + 37 * c);
  }
  cells.push_back(KvLineage::Fresh());
  keys.push_back(9000);
  std::vector<DecodeAttentionRow> rows;
  for (size_t r = 0; r < cells.size(); ++r) {
    rows.push_back({static_cast<int>(r), keys[r], &cells[r]});
  }
  rows.push_back({static_cast<int>(cells.size()), 5000, nullptr});
  const PlanCheck shared = CheckPlan(rows, kDecodeShareRows);
  const PlanCheck alone = CheckPlan(rows, 1);
  EXPECT_EQ(alone.shared_items, 0);
  EXPECT_GT(shared.shared_items, 0);
  // Windows [0, 3000) are common to the 20 cells: 11 full windows in 3 items each.
  EXPECT_LT(shared.items + 11 * (20 - 3), alone.items + 1);
}

TEST(DecodeAttentionPlanTest, RowsWithoutCommonOwnersNeverShare) {
  const KvLineage a = KvLineage::Fresh(), b = KvLineage::Fresh();
  const std::vector<DecodeAttentionRow> rows = {{0, 4096, &a}, {1, 4096, &b}, {2, 4096, nullptr}};
  EXPECT_EQ(CheckPlan(rows, kDecodeShareRows).shared_items, 0);
}

TEST(DecodeAttentionPlanTest, ThePartialLastWindowIsAlwaysARowsOwn) {
  // Two forks of one cache at 1,000 whose last windows hold keys both wrote the same
  // (1,000 of them) and some of their own: window 3 ([768, 1024)) is partial for both
  // (keys 1,000 and 1,010) and stays unshared.
  const KvLineage root = KvLineage::Fresh();
  const KvLineage x = root.ForkAt(1000), y = root.ForkAt(1000);
  const std::vector<DecodeAttentionRow> rows = {{0, 1000, &x}, {1, 1010, &y}};
  const PlanCheck check = CheckPlan(rows, kDecodeShareRows);
  EXPECT_EQ(check.shared_items, 3);  // windows 0, 1, 2
  EXPECT_EQ(check.items, 5u);
}

}  // namespace
}  // namespace hgeval::cuda
