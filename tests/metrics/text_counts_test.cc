// Word / byte counts of wikitext's process_results.
#include "metrics/text_counts.h"

#include "engine/tokenizer/utf8.h"
#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

TEST(WordCountTest, WhitespaceRunsPlusOne) {
  // re.split(r"\s+", " = Title = \n foo") -> ['', '=', 'Title', '=', 'foo']
  EXPECT_EQ(PythonWhitespaceSplitCount(" = Title = \n foo"), 5);
  EXPECT_EQ(PythonWhitespaceSplitCount("a b"), 2);
  EXPECT_EQ(PythonWhitespaceSplitCount(""), 1);
  EXPECT_EQ(PythonWhitespaceSplitCount(" "), 2);
  EXPECT_EQ(PythonWhitespaceSplitCount("a \t\n b "), 3);
}

TEST(WordCountTest, UnicodeWhitespace) {
  EXPECT_EQ(PythonWhitespaceSplitCount("a\xC2\xA0"
                                       "b"),
            2);  // NBSP
  EXPECT_EQ(PythonWhitespaceSplitCount("a\xE3\x80\x80"
                                       "b"),
            2);  // ideographic space
  EXPECT_EQ(PythonWhitespaceSplitCount("a\xE2\x80\x8B"
                                       "b"),
            1);  // ZWSP is not \s
  EXPECT_EQ(PythonWhitespaceSplitCount("a\x1C"
                                       "b"),
            2);  // file separator
  EXPECT_TRUE(utf8::IsPythonWhitespace(0x85));
  EXPECT_FALSE(utf8::IsPythonWhitespace(0x200B));
}

TEST(ByteCountTest, Utf8Bytes) { EXPECT_EQ(Utf8ByteCount("\xC3\xA9t\xC3\xA9"), 5); }

}  // namespace
}  // namespace hgeval::metrics
