// TopKLogprobs (engine/model/top_k.h): the top-k alternatives every backend reports.
#include "engine/model/top_k.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval {
namespace {

TEST(TopKLogprobsTest, HighestFirstLowestIdFirstAmongTies) {
  const std::vector<float> row = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  const std::vector<TokenLogprob> top = TopKLogprobs(row, 3, 0.0);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].token, 1);
  EXPECT_EQ(top[1].token, 3);
  EXPECT_EQ(top[2].token, 4);
  EXPECT_EQ(top[0].logprob, 2.0f);
}

TEST(TopKLogprobsTest, SubtractsTheNormaliserInDouble) {
  const std::vector<float> row = {1.0f, 1e-8f};
  const double lse = 0.25;
  const std::vector<TokenLogprob> top = TopKLogprobs(row, 2, lse);
  EXPECT_EQ(top[0].logprob, static_cast<float>(1.0 - lse));
  EXPECT_EQ(top[1].logprob, static_cast<float>(static_cast<double>(1e-8f) - lse));
}

TEST(TopKLogprobsTest, KIsClampedToTheRow) {
  const std::vector<float> row = {0.0f, 1.0f};
  EXPECT_EQ(TopKLogprobs(row, 5, 0.0).size(), 2u);
  EXPECT_TRUE(TopKLogprobs(row, 0, 0.0).empty());
  EXPECT_TRUE(TopKLogprobs({}, 3, 0.0).empty());
}

}  // namespace
}  // namespace hgeval
