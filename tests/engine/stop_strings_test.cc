// Stop strings as lm-eval's generate_until applies them (`for term in until: if len(term)
// > 0: s = s.split(term)[0]`): the text is cut before the earliest occurrence of any
// non-empty stop string, whatever their order. Every route (engine CLI, evaluator, RPC,
// jobs) cuts through CutAtStopStrings.
#include <string>
#include <vector>

#include "engine/runtime/generation.h"
#include "gtest/gtest.h"

namespace hgeval {
namespace {

TEST(StopStringsTest, CutsBeforeTheEarliestStopWhateverTheirOrder) {
  const std::string text = "answer: 42\n\nQuestion: next";
  EXPECT_EQ(CutAtStopStrings(text, std::vector<std::string>{"Question:", "\n\n"}), "answer: 42");
  EXPECT_EQ(CutAtStopStrings(text, std::vector<std::string>{"\n\n", "Question:"}), "answer: 42");
  EXPECT_EQ(FirstStopString(text, std::vector<std::string>{"Question:", "\n\n"}), 10u);
}

TEST(StopStringsTest, EmptyStopStringsAreIgnoredAsLmEvalDoes) {
  // "".split("") would raise in Python; lm-eval skips empty terms, so nothing is cut.
  EXPECT_EQ(CutAtStopStrings("keep all of it", std::vector<std::string>{""}), "keep all of it");
  EXPECT_EQ(CutAtStopStrings("a.b", std::vector<std::string>{"", "."}), "a");
  EXPECT_EQ(FirstStopString("abc", std::vector<std::string>{""}), std::string::npos);
}

TEST(StopStringsTest, NoStopLeavesTheTextAndAStopAtTheStartLeavesNothing) {
  EXPECT_EQ(CutAtStopStrings("no stop here", std::vector<std::string>{"\n"}), "no stop here");
  EXPECT_EQ(CutAtStopStrings("\nrest", std::vector<std::string>{"\n"}), "");
  EXPECT_EQ(CutAtStopStrings("", std::vector<std::string>{"\n"}), "");
}

}  // namespace
}  // namespace hgeval
