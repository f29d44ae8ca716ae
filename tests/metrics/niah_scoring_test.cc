// Judge-free NIAH cell scorers.
#include "metrics/niah_scoring.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

constexpr char kAnswer[] = "eat a sandwich and sit in Dolores Park on a sunny day.";

TEST(NiahScoringTest, Rouge1IsTenTimesFMeasure) {
  EXPECT_DOUBLE_EQ(NiahRouge1Score(kAnswer,
                                   " eat a sandwich and sit in Dolores Park on a "
                                   "sunny day."),
                   10.0);
  // Full needle sentence (21 tokens) against the 12-token answer: P = 1, R = 12/21,
  // F = 24/33.
  EXPECT_NEAR(NiahRouge1Score("The best thing to do in San Francisco is eat a sandwich and "
                              "sit in Dolores Park on a sunny day.",
                              kAnswer),
              10.0 * 24.0 / 33.0, 1e-12);
  EXPECT_EQ(NiahRouge1Score(kAnswer, ""), 0.0);
  EXPECT_EQ(NiahRouge1Score(kAnswer, "go to the zoo"), 0.0);
  // Stemming: "eating sandwiches" shares "eat" and "sandwich" with the answer.
  EXPECT_NEAR(NiahRouge1Score(kAnswer, "eating sandwiches", true),
              10.0 * 2 * (2.0 / 2) * (2.0 / 12) / (1.0 + 2.0 / 12), 1e-12);
  EXPECT_EQ(NiahRouge1Score(kAnswer, "eating sandwiches", false), 0.0);
}

TEST(NiahScoringTest, KeyPhrasesMatchWholeNormalisedTokens) {
  const std::vector<std::string> phrases = {"sandwich", "Dolores Park"};
  EXPECT_DOUBLE_EQ(NiahKeyPhraseScore(phrases, "Eat a SANDWICH in dolores   park!"), 10.0);
  EXPECT_DOUBLE_EQ(NiahKeyPhraseScore(phrases, "I ate a sandwich in the park"), 5.0);
  EXPECT_DOUBLE_EQ(NiahKeyPhraseScore(phrases, "sandwiches at Dolores Parks"), 0.0);
  EXPECT_DOUBLE_EQ(NiahKeyPhraseScore({}, "sandwich"), 0.0);
}

}  // namespace
}  // namespace hgeval::metrics
