// SQuAD-style answer normalisation, token F1 and exact match (the SQuAD v1.1 evaluation
// script's rules, used by SCROLLS' f1 / exact_match and by lm-eval's qasper yes/no
// test). Expected values are worked out by hand in the comments.
#include "metrics/squad.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

using Strings = std::vector<std::string>;

TEST(SquadNormalizeTest, LowercasesDropsPunctuationArticlesAndExtraSpace) {
  // lower -> "the cat's  hat!", punctuation out -> "the cats  hat", "the" -> " ",
  // whitespace collapsed -> "cats hat".
  EXPECT_EQ(SquadNormalize("The Cat's  hat!"), "cats hat");
  EXPECT_EQ(SquadNormalize("Yes."), "yes");
}

TEST(SquadNormalizeTest, ArticlesOnlyAsWholeWords) {
  // "an" inside "Anthem" and "the" inside "theatre" stay; the word "an" goes.
  EXPECT_EQ(SquadNormalize("Anthem theatre an apple"), "anthem theatre apple");
  EXPECT_EQ(SquadNormalize("A the An"), "");
}

TEST(SquadNormalizeTest, PunctuationIsDeletedNotReplaced) {
  // Punctuation is removed before the article rule: "A-team" -> "ateam" (no article
  // left), "the-end" -> "theend".
  EXPECT_EQ(SquadNormalize("A-team"), "ateam");
  EXPECT_EQ(SquadNormalize("the-end"), "theend");
}

TEST(SquadNormalizeTest, UnicodeLowercaseAndWhitespace) {
  // Latin-1 capitals lower-case (É -> é); U+00A0 is whitespace for str.split().
  EXPECT_EQ(SquadNormalize("\xC3\x89"
                           "COLE"),
            "\xC3\xA9"
            "cole");
  EXPECT_EQ(SquadNormalize("cat\xC2\xA0"
                           "dog"),
            "cat dog");
  // Non-ASCII punctuation is not in string.punctuation and stays; U+2019 is not a word
  // character, so "the" before it is still a whole word and goes.
  EXPECT_EQ(SquadNormalize("the\xE2\x80\x99"), "\xE2\x80\x99");
  // "é" is a word character: no boundary, "the" stays.
  EXPECT_EQ(SquadNormalize("\xC3\xA9the"), "\xC3\xA9the");
}

TEST(SquadNormalizeTest, LowercasesLikePythonOutsideLatin1) {
  // U+0130 lower-cases to "i" + U+0307 (a combining mark, not a word character, so a
  // following "the" is a whole word); the Kelvin sign to "k".
  EXPECT_EQ(SquadNormalize("\xC4\xB0stanbul"), "i\xCC\x87stanbul");
  EXPECT_EQ(SquadNormalize("\xC4\xB0the"), "i\xCC\x87");
  EXPECT_EQ(SquadNormalize("5\xE2\x84\xAA"), "5k");
  // Greek and Cyrillic capitals.
  EXPECT_EQ(SquadNormalize("\xCE\x91\xCE\xB2 \xD0\x9F\xD1\x80\xD0\xB8"),
            "\xCE\xB1\xCE\xB2 \xD0\xBF\xD1\x80\xD0\xB8");
  // An emoji is not a word character: "the" after it is removed.
  EXPECT_EQ(SquadNormalize("\xF0\x9F\x98\x80the"), "\xF0\x9F\x98\x80");
}

TEST(SquadF1Test, TokenOverlap) {
  // "cat sat" against "cat sat down": 2 shared, P = 1, R = 2/3, F = 0.8.
  EXPECT_NEAR(SquadF1("the cat sat", "a cat sat down"), 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(SquadF1("Cat sat.", "cat SAT"), 1.0);
}

TEST(SquadF1Test, RepeatedTokensCountOnce) {
  // "cat cat cat" against "cat dog": min(3, 1) = 1 shared: P = 1/3, R = 1/2, F = 0.4.
  EXPECT_NEAR(SquadF1("cat cat cat", "cat dog"), 0.4, 1e-12);
}

TEST(SquadF1Test, EmptyAndPunctuationOnlyPredictions) {
  // Nothing shared gives 0, even when both sides normalise to nothing.
  EXPECT_DOUBLE_EQ(SquadF1("", "cat"), 0.0);
  EXPECT_DOUBLE_EQ(SquadF1("?!", "yes"), 0.0);
  EXPECT_DOUBLE_EQ(SquadF1("", ""), 0.0);
}

TEST(SquadExactMatchTest, ComparesNormalisedStrings) {
  EXPECT_TRUE(SquadExactMatch("The answer.", "answer"));
  EXPECT_FALSE(SquadExactMatch("answers", "answer"));
  // Both sides normalise to "": a match, although F1 is 0.
  EXPECT_TRUE(SquadExactMatch("", "The"));
  EXPECT_TRUE(SquadExactMatch("?!", "..."));
  EXPECT_TRUE(SquadExactMatch("Caf\xC3\x89", "caf\xC3\xA9"));
}

TEST(SquadReferencesTest, MaxOverReferences) {
  // "blue" against "red" (0) and "light blue" (P = 1, R = 1/2, F = 2/3).
  const Strings references = {"red", "light blue"};
  EXPECT_NEAR(SquadF1MaxOverReferences("blue", references), 2.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(SquadExactMatchMaxOverReferences("Yes.", {"no", "yes"}), 1.0);
  EXPECT_DOUBLE_EQ(SquadExactMatchMaxOverReferences("maybe", {"no", "yes"}), 0.0);
  EXPECT_DOUBLE_EQ(SquadF1MaxOverReferences("blue", {}), 0.0);
}

}  // namespace
}  // namespace hgeval::metrics
