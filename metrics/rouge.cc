#include "metrics/rouge.h"

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/rouge_stemmer.h"

namespace hgeval::metrics {
namespace {

RougeScore FromCounts(double overlap, double target_count, double prediction_count) {
  RougeScore s;
  s.precision = overlap / std::max(prediction_count, 1.0);
  s.recall = overlap / std::max(target_count, 1.0);
  if (s.precision + s.recall > 0) {
    s.fmeasure = 2 * s.precision * s.recall / (s.precision + s.recall);
  }
  return s;
}

std::map<std::vector<std::string>, int> CountNgrams(const std::vector<std::string>& tokens, int n) {
  std::map<std::vector<std::string>, int> counts;
  if (n <= 0) return counts;
  for (size_t i = 0; i + n <= tokens.size(); ++i) {
    ++counts[std::vector<std::string>(tokens.begin() + i, tokens.begin() + i + n)];
  }
  return counts;
}

}  // namespace

std::vector<std::string> RougeTokenize(std::string_view text, bool use_stemmer) {
  std::vector<std::string> tokens;
  std::string current;
  auto flush = [&]() {
    if (current.empty()) return;
    if (use_stemmer && current.size() > 3) current = PorterStem(current);
    if (!current.empty()) tokens.push_back(current);
    current.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    // The only non-ASCII characters whose Python lower() holds an ASCII letter:
    // U+0130 -> "i" + U+0307, and the Kelvin sign U+212A -> "k".
    if (text.substr(i, 2) == "\xC4\xB0") {
      current.push_back('i');
      flush();
      ++i;
      continue;
    }
    if (text.substr(i, 3) == "\xE2\x84\xAA") {
      current.push_back('k');
      i += 2;
      continue;
    }
    if (c >= 'A' && c <= 'Z') {
      current.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
      current.push_back(static_cast<char>(c));
    } else {
      flush();
    }
  }
  flush();
  return tokens;
}

RougeScore RougeNOnTokens(const std::vector<std::string>& target,
                          const std::vector<std::string>& prediction, int n) {
  const auto target_ngrams = CountNgrams(target, n);
  const auto prediction_ngrams = CountNgrams(prediction, n);
  double overlap = 0;
  for (const auto& [ngram, count] : target_ngrams) {
    auto it = prediction_ngrams.find(ngram);
    if (it != prediction_ngrams.end()) overlap += std::min(count, it->second);
  }
  double target_total = 0, prediction_total = 0;
  for (const auto& [ngram, count] : target_ngrams) target_total += count;
  for (const auto& [ngram, count] : prediction_ngrams) prediction_total += count;
  return FromCounts(overlap, target_total, prediction_total);
}

RougeScore RougeLOnTokens(const std::vector<std::string>& target,
                          const std::vector<std::string>& prediction) {
  if (target.empty() || prediction.empty()) return RougeScore{};
  // One row of the LCS table at a time.
  std::vector<int> previous(prediction.size() + 1, 0), row(prediction.size() + 1, 0);
  for (size_t i = 1; i <= target.size(); ++i) {
    for (size_t j = 1; j <= prediction.size(); ++j) {
      row[j] = target[i - 1] == prediction[j - 1] ? previous[j - 1] + 1
                                                  : std::max(previous[j], row[j - 1]);
    }
    std::swap(previous, row);
  }
  const double lcs = previous[prediction.size()];
  return FromCounts(lcs, static_cast<double>(target.size()),
                    static_cast<double>(prediction.size()));
}

RougeScore RougeN(std::string_view target, std::string_view prediction, int n, bool use_stemmer) {
  return RougeNOnTokens(RougeTokenize(target, use_stemmer), RougeTokenize(prediction, use_stemmer),
                        n);
}

RougeScore RougeL(std::string_view target, std::string_view prediction, bool use_stemmer) {
  return RougeLOnTokens(RougeTokenize(target, use_stemmer), RougeTokenize(prediction, use_stemmer));
}

}  // namespace hgeval::metrics
