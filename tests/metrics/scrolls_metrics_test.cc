// SCROLLS' corpus-level scores (metrics/scrolls.py): best per pair over references,
// mean over pairs, x100, rounded to 4 decimals. Expected values worked out by hand.
#include "metrics/scrolls_metrics.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

using Strings = std::vector<std::string>;

TEST(PythonRoundTest, RoundsTheBinaryValueTiesToEven) {
  EXPECT_DOUBLE_EQ(PythonRound(2.5, 0), 2.0);     // exact tie -> even
  EXPECT_DOUBLE_EQ(PythonRound(0.125, 2), 0.12);  // 0.125 is exact in binary: tie -> even
  EXPECT_DOUBLE_EQ(PythonRound(0.375, 2), 0.38);
  EXPECT_DOUBLE_EQ(PythonRound(100.0 / 3.0, 4), 33.3333);
  EXPECT_TRUE(std::isnan(PythonRound(std::nan(""), 4)));
}

TEST(ScrollsRougeTest, MeanOverPairs) {
  // Pair 1 identical (100 for every key), pair 2 nothing shared (0): means 50.
  const Strings predictions = {"the cat", "dog"};
  const std::vector<Strings> references = {{"the cat"}, {"cat"}};
  const ScrollsRougeScores s = ScrollsRouge(predictions, references);
  EXPECT_DOUBLE_EQ(s.rouge1, 50.0);
  EXPECT_DOUBLE_EQ(s.rouge2, 50.0);
  EXPECT_DOUBLE_EQ(s.rougeL, 50.0);
  EXPECT_DOUBLE_EQ(s.geometric_mean, 50.0);
}

TEST(ScrollsRougeTest, GeometricMeanOfUnroundedMeans) {
  // "a b c d" against "a b d c": R1 = 100; bigrams {ab, bc, cd} vs {ab, bd, dc} share 1:
  // R2 = 100/3 -> 33.3333; LCS 3 of 4: RL = 75. Geometric mean
  // (100 * 100/3 * 75)^(1/3) = 250000^(1/3) = 62.99605... -> 62.9961.
  const ScrollsRougeScores s = ScrollsRouge(Strings{"a b c d"}, std::vector<Strings>{{"a b d c"}});
  EXPECT_DOUBLE_EQ(s.rouge1, 100.0);
  EXPECT_DOUBLE_EQ(s.rouge2, 33.3333);
  EXPECT_DOUBLE_EQ(s.rougeL, 75.0);
  EXPECT_DOUBLE_EQ(s.geometric_mean, 62.9961);
}

TEST(ScrollsRougeTest, BestReferencePerKey) {
  // Against "a dog" nothing is shared, against "the cat" everything: 100 for all keys.
  const ScrollsRougeScores s =
      ScrollsRouge(Strings{"the cat"}, std::vector<Strings>{{"a dog", "the cat"}});
  EXPECT_DOUBLE_EQ(s.rouge1, 100.0);
  EXPECT_DOUBLE_EQ(s.rouge2, 100.0);
  EXPECT_DOUBLE_EQ(s.rougeL, 100.0);
}

TEST(ScrollsRougeTest, EmptyPredictionScoresZeroAndEmptyCorpusIsNaN) {
  const ScrollsRougeScores s = ScrollsRouge(Strings{""}, std::vector<Strings>{{"the cat"}});
  EXPECT_DOUBLE_EQ(s.rouge1, 0.0);
  EXPECT_DOUBLE_EQ(s.geometric_mean, 0.0);
  EXPECT_TRUE(std::isnan(ScrollsRouge({}, {}).rouge1));
}

TEST(ScrollsF1Test, MeanOfBestF1Times100) {
  // Pair 1: "cat sat" vs "cat sat down": P = 1, R = 2/3, F = 0.8. Pair 2: "dog" matches
  // the reference "dog" (F = 1; "a cat" gives 0). Mean 0.9 -> 90.
  const Strings predictions = {"cat sat", "dog"};
  const std::vector<Strings> references = {{"cat sat down"}, {"dog", "a cat"}};
  EXPECT_DOUBLE_EQ(ScrollsF1(predictions, references), 90.0);
}

TEST(ScrollsF1Test, RoundsToFourDecimals) {
  // Three pairs: F = 2/3 ("blue" vs "light blue"), 0, 0: mean 2/9 -> 22.2222.
  const Strings predictions = {"blue", "x", "y"};
  const std::vector<Strings> references = {{"light blue"}, {"z"}, {"z"}};
  EXPECT_DOUBLE_EQ(ScrollsF1(predictions, references), 22.2222);
}

TEST(ScrollsExactMatchTest, MeanOfBestMatchTimes100) {
  // "The answer" normalises to "answer" (match); "x" vs "y" does not: 50.
  const Strings predictions = {"The answer", "x"};
  const std::vector<Strings> references = {{"answer"}, {"y"}};
  EXPECT_DOUBLE_EQ(ScrollsExactMatch(predictions, references), 50.0);
}

}  // namespace
}  // namespace hgeval::metrics
