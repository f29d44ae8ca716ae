#include "engine/tokenizer/regex_splitter.h"

#include <re2/re2.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/tokenizer/utf8.h"

namespace hgeval {
namespace {

// Unicode White_Space, for use inside a character class.
constexpr std::string_view kWhiteSpaceClass =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"
    "\\x{202F}\\x{205F}\\x{3000}";

std::string PatternText(RegexSplitter::Pattern pattern) {
  std::string text;
  switch (pattern) {
    case RegexSplitter::Pattern::kGpt2:
      // The last two alternatives (`\s+(?!\S)|\s+`) become one `\s+`; see the header.
      text = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^WS\p{L}\p{N}]+|[WS]+)";
      break;
    case RegexSplitter::Pattern::kCl100k:
      text =
          R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^WS\p{L}\p{N}]+[\r\n]*|[WS]+$|[WS]*[\r\n]|[WS]+|[WS])";
      break;
  }
  return absl::StrReplaceAll(
      text, {{"WS", absl::string_view(kWhiteSpaceClass.data(), kWhiteSpaceClass.size())}});
}

bool AllWhiteSpace(std::string_view piece, bool* has_newline) {
  *has_newline = false;
  for (size_t pos = 0; pos < piece.size();) {
    const size_t n = utf8::SequenceLength(piece, pos);
    if (n == 0) return false;
    const char32_t cp = utf8::DecodeAt(piece, pos);
    if (!utf8::IsWhiteSpace(cp)) return false;
    if (cp == '\r' || cp == '\n') *has_newline = true;
    pos += n;
  }
  return true;
}

// Byte length of the last UTF-8 character of a non-empty valid piece.
size_t LastCharLength(std::string_view piece) {
  size_t n = 1;
  while (n < piece.size() && (static_cast<unsigned char>(piece[piece.size() - n]) & 0xC0) == 0x80) {
    ++n;
  }
  return n;
}

}  // namespace

RegexSplitter::RegexSplitter(Pattern pattern, std::unique_ptr<re2::RE2> regex)
    : pattern_(pattern), regex_(std::move(regex)) {}

RegexSplitter::~RegexSplitter() = default;

absl::StatusOr<std::unique_ptr<RegexSplitter>> RegexSplitter::Create(Pattern pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_encoding(RE2::Options::EncodingUTF8);
  options.set_max_mem(64 << 20);
  auto regex = std::make_unique<re2::RE2>(PatternText(pattern), options);
  if (!regex->ok()) {
    return absl::InternalError(absl::StrCat("pre-tokenizer regex: ", regex->error()));
  }
  return std::unique_ptr<RegexSplitter>(new RegexSplitter(pattern, std::move(regex)));
}

void RegexSplitter::Split(std::string_view text, std::vector<std::string_view>* pieces) const {
  const re2::StringPiece whole(text.data(), text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    re2::StringPiece match;
    size_t end;
    if (regex_->Match(whole, pos, text.size(), RE2::ANCHOR_START, &match, 1) && !match.empty()) {
      end = pos + match.size();
    } else {
      // Every char starts a match of both patterns; this only guards against surprises.
      const size_t n = utf8::SequenceLength(text, pos);
      end = pos + (n == 0 ? 1 : n);
    }
    std::string_view piece = text.substr(pos, end - pos);
    bool has_newline = false;
    // Emulate `\s+(?!\S)`: a whitespace run followed by a non-space char gives back its
    // last char. For cl100k a run with \r or \n was matched by `\s*[\r\n]` instead, which
    // comes first and has no look-ahead.
    if (end < text.size() && AllWhiteSpace(piece, &has_newline) &&
        !(pattern_ == Pattern::kCl100k && has_newline)) {
      const size_t last = LastCharLength(piece);
      if (last < piece.size()) piece.remove_suffix(last);
    }
    pieces->push_back(piece);
    pos += piece.size();
  }
}

}  // namespace hgeval
