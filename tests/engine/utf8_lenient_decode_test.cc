// utf8::NextCodePointLenient, the decoder behind metrics' and tasks' Python text rules:
// exact on well-formed text, and the pinned lenient results on ill-formed bytes.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "engine/tokenizer/utf8.h"

namespace hgeval::utf8 {
namespace {

struct Decoded {
  char32_t cp;
  size_t consumed;
};

Decoded DecodeFirst(std::string_view text) {
  size_t pos = 0;
  const char32_t cp = NextCodePointLenient(text, &pos);
  return {cp, pos};
}

TEST(Utf8LenientDecodeTest, EveryScalarValueRoundTrips) {
  int mismatches = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    const std::string bytes = Encode(cp) + "x";
    const Decoded d = DecodeFirst(bytes);
    if ((d.cp != cp || d.consumed != bytes.size() - 1) && ++mismatches <= 5) {
      ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Utf8LenientDecodeTest, IllFormedBytes) {
  struct Case {
    std::string bytes;
    char32_t cp;
    size_t consumed;
  };
  for (const Case& c : {
           Case{"\x80", 0xFFFD, 1},                // stray continuation
           Case{"\xC0\xA0", 0xFFFD, 1},            // C0/C1 never start a sequence
           Case{"\xE2\x82", 0xFFFD, 1},            // truncated
           Case{"\xE2\x28\xA1", 0xFFFD, 1},        // bad continuation
           Case{"\xF8\x88\x80\x80", 0xFFFD, 1},    // 5-byte form
           Case{"\xE0\x80\xA0", 0x20, 3},          // overlong space: lenient, decodes
           Case{"\xED\xA0\x80", 0xD800, 3},        // surrogate: lenient, decodes
           Case{"\xF5\x80\x80\x80", 0x140000, 4},  // beyond U+10FFFF: lenient, decodes
       }) {
    const Decoded d = DecodeFirst(c.bytes);
    EXPECT_EQ(d.cp, c.cp) << c.bytes.size() << " bytes";
    EXPECT_EQ(d.consumed, c.consumed) << c.bytes.size() << " bytes";
  }
}

}  // namespace
}  // namespace hgeval::utf8
