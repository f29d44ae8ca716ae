// engine/tokenizer/utf8's two whitespace rules over every code point: Unicode White_Space
// (the tokenizers' regex \s) and Python's str.isspace() (lm-eval's strip/split rules).
#include <gtest/gtest.h>

#include <set>

#include "engine/tokenizer/utf8.h"

namespace hgeval::utf8 {
namespace {

// [c for c in range(0x110000) if chr(c).isspace()] in Python 3.11 (Unicode 14.0).
const std::set<char32_t> kPythonIsSpace = {
    0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x1C,   0x1D,   0x1E,   0x1F,   0x20,
    0x85,   0xA0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
    0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};

TEST(Utf8WhitespaceTest, PythonWhitespaceIsStrIsspaceForEveryCodePoint) {
  int mismatches = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const bool want = kPythonIsSpace.count(cp) > 0;
    if (IsPythonWhitespace(cp) != want && ++mismatches <= 5) {
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp) << " want " << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// White_Space (PropList.txt) is the same set without the four information separators
// U+001C..U+001F, which Python counts as whitespace and regex engines' \s do not.
TEST(Utf8WhitespaceTest, WhiteSpaceIsPythonsSetWithoutTheSeparators) {
  int mismatches = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const bool want = kPythonIsSpace.count(cp) > 0 && !(cp >= 0x1C && cp <= 0x1F);
    if (IsWhiteSpace(cp) != want && ++mismatches <= 5) {
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp) << " want " << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_FALSE(IsPythonWhitespace(0x200B));  // zero width space: neither rule
  EXPECT_FALSE(IsPythonWhitespace(0x180E));  // Mongolian vowel separator: Cf since 6.3
}

}  // namespace
}  // namespace hgeval::utf8
