// UTF-8 helpers shared by the tokenizers: validation, code point iteration, lossy repair.
#ifndef HGEVAL_ENGINE_TOKENIZER_UTF8_H_
#define HGEVAL_ENGINE_TOKENIZER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hgeval::utf8 {

// Length of the well-formed UTF-8 sequence starting at text[pos], or 0 when the bytes there
// are not one (truncated, overlong, surrogate, > U+10FFFF, stray continuation byte).
size_t SequenceLength(std::string_view text, size_t pos);

// Whether the whole text is well-formed UTF-8.
bool IsValid(std::string_view text);

// Byte offset of the first ill-formed sequence, or npos when the text is valid.
size_t FirstInvalidOffset(std::string_view text);

// Decodes the sequence at text[pos]; U+FFFD when it is not well-formed (or pos is past the
// end), so callers never read out of bounds.
char32_t DecodeAt(std::string_view text, size_t pos);

// Lenient decoding for the Python text rules of metrics and tasks (strip, split, lengths):
// decodes the sequence at text[*pos] and advances *pos past it. A lead byte C2..F7 with
// enough continuation bytes decodes without range checks (so overlongs from E0/F0,
// surrogates and F5..F7 leads pass); any other byte is U+FFFD and consumes one byte.
// Those rules' results on ill-formed bytes are pinned by tests, hence not DecodeAt.
char32_t NextCodePointLenient(std::string_view text, size_t* pos);

// Appends the UTF-8 encoding of code point cp.
void Append(char32_t cp, std::string* out);
std::string Encode(char32_t cp);

// Replaces every maximal ill-formed subpart with U+FFFD (the Unicode/WHATWG policy that
// Rust's String::from_utf8_lossy and Python's errors="replace" both follow).
std::string ToValidLossy(std::string_view bytes);

// Number of bytes at the end of `text` that form an incomplete (but so far well-formed)
// UTF-8 sequence prefix; 0 when the text ends on a sequence boundary.
size_t IncompleteTailLength(std::string_view text);

// Unicode White_Space property (what \s means in Oniguruma, fancy-regex and Rust regex).
bool IsWhiteSpace(char32_t cp);

// Python's str.isspace() for one code point: what str.strip(), str.split() and re's \s in a
// str pattern use, so lm-eval's text rules. White_Space plus U+001C..U+001F, which Python
// also counts as separators.
bool IsPythonWhitespace(char32_t cp);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// A byte-fallback piece "<0xNN>" (exactly 6 chars, two hex digits of either case) -> the
// byte. HF's ByteFallback decoder and llama2.c's run.c accept the same form.
bool ParseByteFallbackPiece(std::string_view piece, uint8_t* byte);

}  // namespace hgeval::utf8

#endif  // HGEVAL_ENGINE_TOKENIZER_UTF8_H_
