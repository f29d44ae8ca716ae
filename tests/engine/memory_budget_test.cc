// MemoryBudget (engine/util/memory_budget.h): charges and refusals with numbers,
// reclaimers asked before a refusal, and the forms --device_memory / --host_memory take.
#include "engine/util/memory_budget.h"

#include <string>

#include "gtest/gtest.h"

namespace hgeval {
namespace {

constexpr size_t kGiB = size_t{1} << 30;

TEST(MemoryBudget, RefusesWhatDoesNotFitAndNamesTheNumbers) {
  MemoryBudget budget("test memory", 1000);
  EXPECT_TRUE(budget.Reserve(600, "a").ok());
  absl::Status refused = budget.Reserve(500, "a state");
  ASSERT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_NE(refused.message().find("a state needs 500 B of test memory"), std::string::npos)
      << refused;
  EXPECT_NE(refused.message().find("600 B"), std::string::npos) << refused;
  EXPECT_EQ(budget.held(), 600u);
  budget.Release(600);
  EXPECT_TRUE(budget.Reserve(1000, "all").ok());
  EXPECT_EQ(budget.available(), 0u);
  EXPECT_EQ(budget.peak(), 1000u);
}

TEST(MemoryBudget, AsksReclaimersBeforeRefusing) {
  MemoryBudget budget("pool", 100);
  size_t cached = 70;
  ASSERT_TRUE(budget.Reserve(90, "blocks").ok());  // 70 of them cached, 20 live
  budget.AddReclaimer(
      &cached,
      [&] {
        budget.Release(cached);
        cached = 0;
      },
      [&] { return cached; });
  EXPECT_EQ(budget.available(), 10u);
  EXPECT_EQ(budget.obtainable(), 80u);
  EXPECT_TRUE(budget.Reserve(50, "new block").ok());
  EXPECT_EQ(cached, 0u);
  EXPECT_EQ(budget.held(), 70u);
  budget.RemoveReclaimer(&cached);
}

TEST(MemoryBudget, UnboundedWhenTheLimitIsZero) {
  MemoryBudget budget("host", 0);
  EXPECT_TRUE(budget.Reserve(size_t{1} << 50, "huge").ok());
}

TEST(ParseMemorySize, TakesUnitsFractionsAndPercentages) {
  EXPECT_EQ(*ParseMemorySize("20GiB", 0), 20 * kGiB);
  EXPECT_EQ(*ParseMemorySize("512MiB", 0), size_t{512} << 20);
  EXPECT_EQ(*ParseMemorySize("8GB", 0), size_t{8000000000});
  EXPECT_EQ(*ParseMemorySize("1.5G", 0), kGiB + kGiB / 2);
  EXPECT_EQ(*ParseMemorySize("123456", 0), size_t{123456});
  EXPECT_EQ(*ParseMemorySize("0.5", 80 * kGiB), 40 * kGiB);
  EXPECT_EQ(*ParseMemorySize("25%", 80 * kGiB), 20 * kGiB);
  EXPECT_EQ(*ParseMemorySize("", 0), 0u);
  EXPECT_EQ(*ParseMemorySize("auto", 0), 0u);
  for (const char* bad : {"-1GiB", "lots", "20 parsecs", "150%", "nan"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseMemorySize(bad, kGiB).status())) << bad;
  }
}

}  // namespace
}  // namespace hgeval
