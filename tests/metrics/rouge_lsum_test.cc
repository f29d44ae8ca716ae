// rougeLsum, the ROUGE types by name and the best score over several references, as
// google-research's rouge_score computes them. Every expected value is worked out by
// hand in the comment above it.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/rouge.h"

namespace hgeval::metrics {
namespace {

using Strings = std::vector<std::string>;

TEST(RougeLsumTest, OneSentenceEachEqualsRougeL) {
  // LCS of "the cat sat on the mat" and "the cat on the mat" is 5 tokens:
  // P = 5/5, R = 5/6, F = 2 * 5/6 / (11/6) = 10/11.
  const RougeScore s = RougeLsum("the cat sat on the mat", "the cat on the mat", false);
  EXPECT_DOUBLE_EQ(s.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.recall, 5.0 / 6.0);
  EXPECT_NEAR(s.fmeasure, 10.0 / 11.0, 1e-12);
}

TEST(RougeLsumTest, UnionOfLcsOverPredictionSentences) {
  // The ROUGE paper's example: reference sentence w1..w5, candidate sentences
  // "w1 w2 w6 w7 w8" (LCS w1 w2) and "w1 w3 w8 w9 w5" (LCS w1 w3 w5). The union is
  // w1 w2 w3 w5: 4 hits; 5 reference and 10 candidate tokens.
  // P = 4/10, R = 4/5, F = 2 * 0.32 / 1.2 = 8/15.
  const RougeScore s = RougeLsum("w1 w2 w3 w4 w5", "w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", false);
  EXPECT_DOUBLE_EQ(s.precision, 0.4);
  EXPECT_DOUBLE_EQ(s.recall, 0.8);
  EXPECT_NEAR(s.fmeasure, 8.0 / 15.0, 1e-12);
}

TEST(RougeLsumTest, SentenceOrderDoesNotMatterButForRougeLItDoes) {
  // Sentences "a b" / "c d" against "c d" / "a b": each reference sentence finds its
  // twin, 4 hits of 4 tokens: P = R = F = 1.
  RougeScore s = RougeLsum("a b\nc d", "c d\na b", false);
  EXPECT_DOUBLE_EQ(s.fmeasure, 1.0);
  // rougeL sees "a b c d" against "c d a b": LCS 2, P = R = F = 1/2.
  s = RougeL("a b\nc d", "c d\na b", false);
  EXPECT_DOUBLE_EQ(s.fmeasure, 0.5);
}

TEST(RougeLsumTest, HitsAreNotCountedTwice) {
  // Reference sentences "x y" and "x y", prediction "x y": the first reference sentence
  // takes the prediction's only x and y (2 hits); the second finds none left.
  // P = 2/2, R = 2/4, F = 2/3.
  const RougeScore s = RougeLsum("x y\nx y", "x y", false);
  EXPECT_DOUBLE_EQ(s.precision, 1.0);
  EXPECT_DOUBLE_EQ(s.recall, 0.5);
  EXPECT_NEAR(s.fmeasure, 2.0 / 3.0, 1e-12);
}

TEST(RougeLsumTest, BacktrackPicksTheLastMatchingPosition) {
  // Reference sentence "a a", prediction sentences "a" and "a". The backtrack starts at
  // the end, so both LCSs cover reference position 1; the union {1} gives 1 hit.
  // P = 1/2, R = 1/2, F = 1/2 (rougeL on the whole texts would give 1).
  const RougeScore s = RougeLsum("a a", "a\na", false);
  EXPECT_DOUBLE_EQ(s.precision, 0.5);
  EXPECT_DOUBLE_EQ(s.recall, 0.5);
  EXPECT_DOUBLE_EQ(s.fmeasure, 0.5);
  EXPECT_DOUBLE_EQ(RougeL("a a", "a\na", false).fmeasure, 1.0);
}

TEST(RougeLsumTest, EmptyLinesAreDropped) {
  // Blank lines are not sentences: the same score as without them (1, as above).
  EXPECT_DOUBLE_EQ(RougeLsum("a b\n\n\nc d\n", "c d\na b", false).fmeasure, 1.0);
}

TEST(RougeLsumTest, EmptyOrPunctuationOnlyPredictionScoresZero) {
  // No prediction sentence, or sentences without tokens: all zero.
  EXPECT_DOUBLE_EQ(RougeLsum("a b", "", false).fmeasure, 0.0);
  const RougeScore s = RougeLsum("a b", "...\n!!", false);
  EXPECT_DOUBLE_EQ(s.precision, 0.0);
  EXPECT_DOUBLE_EQ(s.recall, 0.0);
  EXPECT_DOUBLE_EQ(s.fmeasure, 0.0);
}

TEST(RougeLsumTest, StemmingOnAndOff) {
  // Reference "The cats ran" / "Dogs bark", prediction "a cat ran".
  // Stemmed: [the cat ran] [dog bark] vs [a cat ran]: hits cat, ran (2); 5 and 3 tokens.
  // P = 2/3, R = 2/5, F = 2 * (4/15) / (16/15) = 1/2.
  RougeScore s = RougeLsum("The cats ran\nDogs bark", "a cat ran", true);
  EXPECT_NEAR(s.precision, 2.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.recall, 0.4);
  EXPECT_NEAR(s.fmeasure, 0.5, 1e-12);
  // Unstemmed: only "ran" is shared: P = 1/3, R = 1/5, F = 2 * (1/15) / (8/15) = 1/4.
  s = RougeLsum("The cats ran\nDogs bark", "a cat ran", false);
  EXPECT_NEAR(s.precision, 1.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(s.recall, 0.2);
  EXPECT_NEAR(s.fmeasure, 0.25, 1e-12);
}

TEST(RougeTypesTest, RepeatedBigramsAreClipped) {
  // Reference "a b a b": bigrams {ab: 2, ba: 1}; prediction "a b a b a b":
  // {ab: 3, ba: 2}. Overlap min(2,3) + min(1,2) = 3; P = 3/5, R = 3/3, F = 0.75.
  const RougeScore s = Rouge(RougeType::kRouge2, "a b a b", "a b a b a b", false);
  EXPECT_DOUBLE_EQ(s.precision, 0.6);
  EXPECT_DOUBLE_EQ(s.recall, 1.0);
  EXPECT_NEAR(s.fmeasure, 0.75, 1e-12);
}

TEST(RougeTypesTest, SingleTokensHaveNoBigrams) {
  // No bigram on either side: overlap 0, P = 0/max(0,1) = 0, F = 0.
  EXPECT_DOUBLE_EQ(Rouge(RougeType::kRouge2, "cat", "cat", false).fmeasure, 0.0);
  EXPECT_DOUBLE_EQ(Rouge(RougeType::kRouge1, "cat", "cat", false).fmeasure, 1.0);
}

TEST(RougeTypesTest, PunctuationOnlyPredictionScoresZero) {
  for (RougeType type :
       {RougeType::kRouge1, RougeType::kRouge2, RougeType::kRougeL, RougeType::kRougeLsum}) {
    EXPECT_DOUBLE_EQ(Rouge(type, "hello there", "!!! ... ?", false).fmeasure, 0.0)
        << RougeTypeName(type);
  }
}

TEST(RougeTypesTest, UnicodeLettersSplitTokens) {
  // "naïve café" tokenizes to na, ve, caf; "naive cafe" to naive, cafe: nothing shared.
  EXPECT_DOUBLE_EQ(
      Rouge(RougeType::kRouge1, "naive cafe", "na\xC3\xAFve caf\xC3\xA9", false).fmeasure, 0.0);
  // "café" and "caf" both become the single token "caf": F = 1.
  EXPECT_DOUBLE_EQ(Rouge(RougeType::kRouge1, "caf", "caf\xC3\xA9", false).fmeasure, 1.0);
}

TEST(RougeTypesTest, StemmingOnAndOffForRouge1) {
  // Reference "the cats are running", prediction "the cat runs".
  // Unstemmed: only "the" is shared: P = 1/3, R = 1/4, F = (2/12) / (7/12) = 2/7.
  EXPECT_NEAR(Rouge(RougeType::kRouge1, "the cats are running", "the cat runs", false).fmeasure,
              2.0 / 7.0, 1e-12);
  // Stemmed (tokens over 3 characters): cats -> cat, running -> run, runs -> run:
  // shared the, cat, run: P = 3/3, R = 3/4, F = 6/7.
  EXPECT_NEAR(Rouge(RougeType::kRouge1, "the cats are running", "the cat runs", true).fmeasure,
              6.0 / 7.0, 1e-12);
}

TEST(RougeTypesTest, Names) {
  EXPECT_STREQ(RougeTypeName(RougeType::kRouge1), "rouge1");
  EXPECT_STREQ(RougeTypeName(RougeType::kRouge2), "rouge2");
  EXPECT_STREQ(RougeTypeName(RougeType::kRougeL), "rougeL");
  EXPECT_STREQ(RougeTypeName(RougeType::kRougeLsum), "rougeLsum");
}

TEST(RougeReferencesTest, BestReferenceWins) {
  // "the cat" against "a dog" shares nothing; against "the cat sat": P = 1, R = 2/3,
  // F = 0.8. The maximum is 0.8.
  const Strings references = {"a dog", "the cat sat"};
  EXPECT_NEAR(RougeFMaxOverReferences(RougeType::kRouge1, "the cat", references, false), 0.8,
              1e-12);
  // rouge2: "the cat" has one bigram, shared with the second reference (2 bigrams):
  // P = 1, R = 1/2, F = 2/3.
  EXPECT_NEAR(RougeFMaxOverReferences(RougeType::kRouge2, "the cat", references, false), 2.0 / 3.0,
              1e-12);
}

TEST(RougeReferencesTest, NoReferenceScoresZero) {
  EXPECT_DOUBLE_EQ(RougeFMaxOverReferences(RougeType::kRougeL, "the cat", {}, false), 0.0);
}

}  // namespace
}  // namespace hgeval::metrics
