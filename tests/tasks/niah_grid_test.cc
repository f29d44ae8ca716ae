// NIAH grid presets and list parsing.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/niah/grid.h"

namespace hgeval::niah {
namespace {

TEST(NiahGridTest, PaperPresetIsKamradtsDefaultGrid) {
  auto grid = NiahGridPreset("paper");
  ASSERT_TRUE(grid.ok());
  // numpy: np.round(np.linspace(1000, 16000, 35)), np.round(np.linspace(0, 100, 35)).
  EXPECT_EQ(grid->lengths,
            (std::vector<int64_t>{1000,  1441,  1882,  2324,  2765,  3206,  3647,  4088,  4529,
                                  4971,  5412,  5853,  6294,  6735,  7176,  7618,  8059,  8500,
                                  8941,  9382,  9824,  10265, 10706, 11147, 11588, 12029, 12471,
                                  12912, 13353, 13794, 14235, 14676, 15118, 15559, 16000}));
  EXPECT_EQ(grid->depths, (std::vector<double>{0,  3,  6,  9,  12, 15, 18, 21, 24, 26, 29, 32,
                                               35, 38, 41, 44, 47, 50, 53, 56, 59, 62, 65, 68,
                                               71, 74, 76, 79, 82, 85, 88, 91, 94, 97, 100}));
}

TEST(NiahGridTest, QuickPreset) {
  auto grid = NiahGridPreset("quick");
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->lengths, (std::vector<int64_t>{1000, 1600, 2200, 2800, 3400, 4000}));
  EXPECT_EQ(grid->depths, (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_FALSE(NiahGridPreset("huge").ok());
}

TEST(NiahGridTest, RoundedLinspaceRoundsHalfToEven) {
  EXPECT_EQ(RoundedLinspace(0, 5, 11),
            (std::vector<double>{0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 5}));  // 0.5 -> 0, 1.5 -> 2
  EXPECT_EQ(RoundedLinspace(7, 9, 1), (std::vector<double>{7}));
}

TEST(NiahGridTest, ParsesUserLists) {
  auto lengths = ParseLengthList(" 4000, 1000,2000,1000 ");
  ASSERT_TRUE(lengths.ok());
  EXPECT_EQ(*lengths, (std::vector<int64_t>{1000, 2000, 4000}));
  auto depths = ParseDepthList("100,0,12.5");
  ASSERT_TRUE(depths.ok());
  EXPECT_EQ(*depths, (std::vector<double>{0, 12.5, 100}));
  EXPECT_FALSE(ParseLengthList("1000,abc").ok());
  EXPECT_FALSE(ParseLengthList("0").ok());
  EXPECT_FALSE(ParseLengthList("").ok());
  EXPECT_FALSE(ParseDepthList("101").ok());
  EXPECT_FALSE(ParseDepthList("-1").ok());
}

TEST(NiahGridTest, ValidatesGrids) {
  EXPECT_TRUE(ValidateNiahGrid(NiahGrid{{1000, 2000}, {0, 100}}).ok());
  EXPECT_FALSE(ValidateNiahGrid(NiahGrid{{2000, 1000}, {0}}).ok());
  EXPECT_FALSE(ValidateNiahGrid(NiahGrid{{1000}, {50, 50}}).ok());
  EXPECT_FALSE(ValidateNiahGrid(NiahGrid{{}, {0}}).ok());
}

}  // namespace
}  // namespace hgeval::niah
