// LowerBoundsFromLogits (engine/model/lower_bounds.h): fla's HGRN/HGRN2 lower bounds,
// the one rule both backends read.
#include "engine/model/lower_bounds.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval {
namespace {

TEST(LowerBoundsTest, CumulativeSoftmaxOverLayersMinusTheFirst) {
  // 3 layers, 2 channels: channel 0 uniform, channel 1 with logits 0, ln 2, ln 5.
  const std::vector<float> raw = {0.0f, 0.0f, 0.0f, std::log(2.0f), 0.0f, std::log(5.0f)};
  const std::vector<std::vector<float>> lb = LowerBoundsFromLogits(raw, 3, 2);
  ASSERT_EQ(lb.size(), 3u);
  EXPECT_EQ(lb[0][0], 0.0f);
  EXPECT_EQ(lb[0][1], 0.0f);
  EXPECT_FLOAT_EQ(lb[1][0], 1.0f / 3);
  EXPECT_FLOAT_EQ(lb[2][0], 2.0f / 3);
  EXPECT_FLOAT_EQ(lb[1][1], 2.0f / 8);
  EXPECT_FLOAT_EQ(lb[2][1], 7.0f / 8);
}

TEST(LowerBoundsTest, LargeLogitsDoNotOverflow) {
  const std::vector<float> raw = {1000.0f, 1000.0f};
  const std::vector<std::vector<float>> lb = LowerBoundsFromLogits(raw, 2, 1);
  EXPECT_FLOAT_EQ(lb[1][0], 0.5f);
}

}  // namespace
}  // namespace hgeval
