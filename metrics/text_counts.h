// Word and byte counts used by the wikitext perplexities (lm-eval
// tasks/wikitext/preprocess_wikitext.py process_results), on the original page text.
#ifndef HGEVAL_METRICS_TEXT_COUNTS_H_
#define HGEVAL_METRICS_TEXT_COUNTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hgeval::metrics {

// Whitespace below is Python's str.isspace() (utf8::IsPythonWhitespace).

// len(re.split(r"\s+", text)): maximal runs of Unicode whitespace + 1.
int64_t PythonWhitespaceSplitCount(std::string_view utf8);

// str.split() with no separator: the maximal runs of non-whitespace.
std::vector<std::string> PythonSplit(std::string_view utf8);
// str.strip() with no argument: leading and trailing Unicode whitespace removed.
std::string_view PythonStrip(std::string_view utf8);

// len(text.encode("utf-8")).
inline int64_t Utf8ByteCount(std::string_view utf8) { return static_cast<int64_t>(utf8.size()); }

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_TEXT_COUNTS_H_
