// Porter stemmer (NLTK_EXTENSIONS mode, what rouge_score's use_stemmer=True runs).
#include "metrics/rouge_stemmer.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

// Expected stems computed with NLTK 3.8: PorterStemmer().stem(word).
const std::vector<std::pair<std::string, std::string>>& NltkStems() {
  static const auto* stems = new std::vector<std::pair<std::string, std::string>>{
      {"caresses", "caress"},
      {"ponies", "poni"},
      {"ties", "tie"},
      {"dies", "die"},
      {"flies", "fli"},
      {"cats", "cat"},
      {"feed", "feed"},
      {"agreed", "agre"},
      {"disabled", "disabl"},
      {"matting", "mat"},
      {"mating", "mate"},
      {"meeting", "meet"},
      {"milling", "mill"},
      {"messing", "mess"},
      {"meetings", "meet"},
      {"happy", "happi"},
      {"enjoy", "enjoy"},
      {"sky", "sky"},
      {"skies", "sky"},
      {"dying", "die"},
      {"generalizations", "gener"},
      {"oscillators", "oscil"},
      {"relational", "relat"},
      {"conditional", "condit"},
      {"rational", "ration"},
      {"valenci", "valenc"},
      {"hesitanci", "hesit"},
      {"digitizer", "digit"},
      {"conformabli", "conform"},
      {"radicalli", "radic"},
      {"differentli", "differ"},
      {"vileli", "vile"},
      {"analogousli", "analog"},
      {"vietnamization", "vietnam"},
      {"predication", "predic"},
      {"operator", "oper"},
      {"feudalism", "feudal"},
      {"decisiveness", "decis"},
      {"hopefulness", "hope"},
      {"callousness", "callous"},
      {"formaliti", "formal"},
      {"sensitiviti", "sensit"},
      {"sensibiliti", "sensibl"},
      {"triplicate", "triplic"},
      {"formative", "form"},
      {"formalize", "formal"},
      {"electriciti", "electr"},
      {"electrical", "electr"},
      {"hopeful", "hope"},
      {"goodness", "good"},
      {"revival", "reviv"},
      {"allowance", "allow"},
      {"inference", "infer"},
      {"airliner", "airlin"},
      {"gyroscopic", "gyroscop"},
      {"adjustable", "adjust"},
      {"defensible", "defens"},
      {"irritant", "irrit"},
      {"replacement", "replac"},
      {"adjustment", "adjust"},
      {"dependent", "depend"},
      {"adoption", "adopt"},
      {"homologou", "homolog"},
      {"communism", "commun"},
      {"activate", "activ"},
      {"angulariti", "angular"},
      {"homologous", "homolog"},
      {"effective", "effect"},
      {"bowdlerize", "bowdler"},
      {"probate", "probat"},
      {"rate", "rate"},
      {"cease", "ceas"},
      {"controll", "control"},
      {"roll", "roll"},
      {"geology", "geolog"},
      {"theology", "theolog"},
      {"fully", "fulli"},
      {"tionally", "tional"},
      {"spied", "spi"},
      {"died", "die"},
      {"proceed", "proceed"},
      {"exceeding", "exceed"},
      {"sandwich", "sandwich"},
      {"dolores", "dolor"},
      {"sunny", "sunni"},
      {"francisco", "francisco"},
      {"innings", "inning"},
      {"news", "news"},
      {"howe", "howe"},
      {"oed", "o"},
      {"yyy", "yyy"},
      {"ying", "ying"},
      {"eed", "eed"},
      {"bled", "bled"},
      {"sing", "sing"},
      {"hopping", "hop"},
      {"tanned", "tan"},
      {"falling", "fall"},
      {"hissing", "hiss"},
      {"fizzed", "fizz"},
      {"failing", "fail"},
      {"filing", "file"},
      {"sized", "size"},
      {"conflated", "conflat"},
      {"troubled", "troubl"},
      {"trying", "tri"},
      {"says", "say"},
  };
  return *stems;
}

TEST(RougeStemmerTest, MatchesNltkPorterStemmer) {
  for (const auto& [word, stem] : NltkStems()) {
    EXPECT_EQ(PorterStem(word), stem) << word;
  }
}

TEST(RougeStemmerTest, ShortWordsAreUnchanged) {
  EXPECT_EQ(PorterStem("is"), "is");
  EXPECT_EQ(PorterStem("a"), "a");
  EXPECT_EQ(PorterStem(""), "");
}

}  // namespace
}  // namespace hgeval::metrics
