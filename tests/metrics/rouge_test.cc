// ROUGE as rouge_score computes it; expected values worked out by hand.
#include "metrics/rouge.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

using Tokens = std::vector<std::string>;

TEST(RougeTokenizeTest, LowercasesAndSplitsOnNonAlphanumerics) {
  EXPECT_EQ(RougeTokenize("Hello, World! It's 2024.\n\tOK", false),
            (Tokens{"hello", "world", "it", "s", "2024", "ok"}));
  EXPECT_EQ(RougeTokenize("  ...  ", false), Tokens{});
  EXPECT_EQ(RougeTokenize("", false), Tokens{});
}

TEST(RougeTokenizeTest, NonAsciiCharactersSeparateTokens) {
  EXPECT_EQ(RougeTokenize("caf\xC3\xA9 na\xC3\xAFve", false), (Tokens{"caf", "na", "ve"}));
  // U+0130 lower-cases to "i" + U+0307 in Python; the Kelvin sign to "k".
  EXPECT_EQ(RougeTokenize("\xC4\xB0stanbul 5\xE2\x84\xAA", false), (Tokens{"i", "stanbul", "5k"}));
}

TEST(RougeTokenizeTest, StemsOnlyTokensLongerThanThreeCharacters) {
  EXPECT_EQ(RougeTokenize("The sunny days, dies and cats", true),
            (Tokens{"the", "sunni", "day", "die", "and", "cat"}));
  EXPECT_EQ(RougeTokenize("The sunny days", false), (Tokens{"the", "sunny", "days"}));
}

TEST(RougeTest, Rouge1CountsClippedUnigramOverlap) {
  // target: the x2, cat, sat, on, mat (6); prediction: the x2, cat, on, mat (5).
  RougeScore s = RougeN("the cat sat on the mat", "The cat on the mat.", 1, false);
  EXPECT_DOUBLE_EQ(s.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.recall, 5.0 / 6.0);
  EXPECT_NEAR(s.fmeasure, 10.0 / 11.0, 1e-12);
  // Clipping: "the the the" against one "the".
  s = RougeN("the cat", "the the the", 1, false);
  EXPECT_DOUBLE_EQ(s.precision, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(s.recall, 1.0 / 2.0);
  EXPECT_NEAR(s.fmeasure, 0.4, 1e-12);
}

TEST(RougeTest, Rouge2CountsBigrams) {
  // target bigrams: the-cat cat-sat sat-on on-the the-mat; prediction: the-cat cat-on
  // on-the the-mat; overlap 3.
  RougeScore s = RougeN("the cat sat on the mat", "the cat on the mat", 2, false);
  EXPECT_DOUBLE_EQ(s.precision, 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(s.recall, 3.0 / 5.0);
  EXPECT_NEAR(s.fmeasure, 2.0 / 3.0, 1e-12);
}

TEST(RougeTest, RougeLUsesLongestCommonSubsequence) {
  RougeScore s = RougeL("the cat sat on the mat", "the cat on the mat", false);
  EXPECT_DOUBLE_EQ(s.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.recall, 5.0 / 6.0);
  // LCS of "a b c d" and "d c b a" is 1 token.
  s = RougeL("a b c d", "d c b a", false);
  EXPECT_DOUBLE_EQ(s.precision, 0.25);
  EXPECT_DOUBLE_EQ(s.recall, 0.25);
  EXPECT_DOUBLE_EQ(s.fmeasure, 0.25);
}

TEST(RougeTest, EmptySidesScoreZero) {
  for (int n : {1, 2}) {
    RougeScore s = RougeN("the cat", "", n, false);
    EXPECT_EQ(s.precision, 0.0);
    EXPECT_EQ(s.recall, 0.0);
    EXPECT_EQ(s.fmeasure, 0.0);
  }
  EXPECT_EQ(RougeL("", "the cat", false).fmeasure, 0.0);
  EXPECT_EQ(RougeN("a b", "c d", 1, false).fmeasure, 0.0);
}

TEST(RougeTest, StemmingMergesInflections) {
  EXPECT_DOUBLE_EQ(RougeN("sunny days", "sunni day", 1, true).fmeasure, 1.0);
  EXPECT_DOUBLE_EQ(RougeN("sunny days", "sunni day", 1, false).fmeasure, 0.0);
}

}  // namespace
}  // namespace hgeval::metrics
