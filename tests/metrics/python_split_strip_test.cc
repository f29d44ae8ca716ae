// str.split() and str.strip() without arguments, on UTF-8: Unicode whitespace counts.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/text_counts.h"

namespace hgeval::metrics {
namespace {

using Strings = std::vector<std::string>;

TEST(PythonSplitTest, SplitsOnRunsOfUnicodeWhitespace) {
  EXPECT_EQ(PythonSplit("  a\tb\n\nc  "), (Strings{"a", "b", "c"}));
  // U+00A0 and U+3000 are whitespace; U+00E9 is not.
  EXPECT_EQ(PythonSplit("caf\xC3\xA9\xC2\xA0x\xE3\x80\x80y"), (Strings{"caf\xC3\xA9", "x", "y"}));
  EXPECT_EQ(PythonSplit(" \n "), Strings{});
  EXPECT_EQ(PythonSplit(""), Strings{});
}

TEST(PythonStripTest, RemovesUnicodeWhitespaceAtBothEnds) {
  EXPECT_EQ(PythonStrip("\n a b \t"), "a b");
  EXPECT_EQ(PythonStrip("\xC2\xA0x\xE2\x80\x83"), "x");  // U+00A0, U+2003
  EXPECT_EQ(PythonStrip(" \n\t"), "");
  EXPECT_EQ(PythonStrip(""), "");
}

}  // namespace
}  // namespace hgeval::metrics
