// acc / acc_norm as lm-eval computes them.
#include "metrics/multiple_choice.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

TEST(ArgmaxTest, TiesGoToTheFirstIndex) {
  EXPECT_EQ(ArgmaxFirst(std::vector<double>{-2, -1, -1}), 1);
  EXPECT_EQ(ArgmaxFirst(std::vector<double>{-1, -1}), 0);
  EXPECT_EQ(ArgmaxFirst(std::vector<double>{}), -1);
}

TEST(AccTest, ArgmaxEqualsGold) {
  EXPECT_EQ(Acc(std::vector<double>{-3, -1, -2}, 1), 1.0);
  EXPECT_EQ(Acc(std::vector<double>{-3, -1, -2}, 2), 0.0);
  // Tie: the first wins.
  EXPECT_EQ(Acc(std::vector<double>{-1, -1}, 0), 1.0);
  EXPECT_EQ(Acc(std::vector<double>{-1, -1}, 1), 0.0);
}

TEST(AccNormTest, DividesByCodePointLengthWithTiesToFirst) {
  // -4 / 2 == -8 / 4: tie, index 0 wins.
  const std::vector<std::string> choices = {"ab", "abcd"};
  EXPECT_EQ(AccNorm(std::vector<double>{-4, -8}, choices, 0), 1.0);
  EXPECT_EQ(AccNorm(std::vector<double>{-4, -8}, choices, 1), 0.0);
  // Raw argmax picks 0, normalized picks 1 (-5 / 2 < -6 / 4).
  EXPECT_EQ(Acc(std::vector<double>{-5, -6}, 1), 0.0);
  EXPECT_EQ(AccNorm(std::vector<double>{-5, -6}, choices, 1), 1.0);
}

TEST(AccNormTest, CodePointsNotBytes) {
  // "é" is 1 code point (2 bytes). Code points: -2 / 1 = -2 vs -3 / 2 = -1.5 -> 1.
  // Bytes would give -2 / 2 = -1 vs -1.5 -> 0.
  const std::vector<std::string> choices = {"\xC3\xA9", "ab"};
  EXPECT_EQ(AccNorm(std::vector<double>{-2, -3}, choices, 1), 1.0);
  EXPECT_EQ(CodePointLength("\xC3\xA9"), 1);
  EXPECT_EQ(CodePointLength("a\xE2\x80\x94z"), 3);    // em dash
  EXPECT_EQ(CodePointLength("\xF0\x9F\x98\x80"), 1);  // emoji
  EXPECT_EQ(CodePointLength(""), 0);
  // Truncated or ill-formed sequences count byte by byte.
  EXPECT_EQ(CodePointLength("\xE2\x80"), 2);
  EXPECT_EQ(CodePointLength("\xE2\x28\xA1"), 3);
  EXPECT_EQ(CodePointLength("\xFF\xC3\xA9"), 2);
}

}  // namespace
}  // namespace hgeval::metrics
