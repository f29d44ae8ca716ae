#include "metrics/text_counts.h"

#include <algorithm>

#include "engine/tokenizer/utf8.h"

namespace hgeval::metrics {

// Python's whitespace rule (the parameters below are named utf8, hence no utf8:: prefix).
using ::hgeval::utf8::IsPythonWhitespace;

char32_t NextCodePoint(std::string_view utf8, size_t* i) {
  const unsigned char c = static_cast<unsigned char>(utf8[*i]);
  size_t len = 1;
  char32_t cp = c;
  if (c >= 0xF0 && c < 0xF8) {
    len = 4;
    cp = c & 0x07;
  } else if (c >= 0xE0 && c < 0xF0) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xC2 && c < 0xE0) {
    len = 2;
    cp = c & 0x1F;
  }
  if (len == 1 || *i + len > utf8.size()) {
    ++*i;
    return c < 0x80 ? c : 0xFFFD;
  }
  for (size_t k = 1; k < len; ++k) {
    const unsigned char cc = static_cast<unsigned char>(utf8[*i + k]);
    if ((cc & 0xC0) != 0x80) {
      ++*i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  *i += len;
  return cp;
}

int64_t PythonWhitespaceSplitCount(std::string_view utf8) {
  int64_t runs = 0;
  bool in_run = false;
  size_t i = 0;
  while (i < utf8.size()) {
    const bool space = IsPythonWhitespace(NextCodePoint(utf8, &i));
    if (space && !in_run) ++runs;
    in_run = space;
  }
  return runs + 1;
}

std::vector<std::string> PythonSplit(std::string_view utf8) {
  std::vector<std::string> words;
  size_t start = 0;
  bool in_word = false;
  for (size_t i = 0; i < utf8.size();) {
    const size_t at = i;
    const bool space = IsPythonWhitespace(NextCodePoint(utf8, &i));
    if (space && in_word) words.emplace_back(utf8.substr(start, at - start));
    if (!space && !in_word) start = at;
    in_word = !space;
  }
  if (in_word) words.emplace_back(utf8.substr(start));
  return words;
}

std::string_view PythonStrip(std::string_view utf8) {
  size_t begin = utf8.size(), end = 0;
  for (size_t i = 0; i < utf8.size();) {
    const size_t at = i;
    if (!IsPythonWhitespace(NextCodePoint(utf8, &i))) {
      begin = std::min(begin, at);
      end = i;
    }
  }
  return begin < end ? utf8.substr(begin, end - begin) : std::string_view();
}

}  // namespace hgeval::metrics
