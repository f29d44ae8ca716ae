#include "metrics/text_counts.h"

#include <algorithm>

#include "engine/tokenizer/utf8.h"

namespace hgeval::metrics {

// The parameters below are named utf8, hence no utf8:: prefix.
using ::hgeval::utf8::IsPythonWhitespace;
using ::hgeval::utf8::NextCodePointLenient;

int64_t PythonWhitespaceSplitCount(std::string_view utf8) {
  int64_t runs = 0;
  bool in_run = false;
  size_t i = 0;
  while (i < utf8.size()) {
    const bool space = IsPythonWhitespace(NextCodePointLenient(utf8, &i));
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
    const bool space = IsPythonWhitespace(NextCodePointLenient(utf8, &i));
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
    if (!IsPythonWhitespace(NextCodePointLenient(utf8, &i))) {
      begin = std::min(begin, at);
      end = i;
    }
  }
  return begin < end ? utf8.substr(begin, end - begin) : std::string_view();
}

}  // namespace hgeval::metrics
