#include "metrics/rouge.h"

#include <algorithm>
#include <map>
#include <set>
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

// The full LCS table of a and b (rouge_score _lcs_table).
std::vector<std::vector<int>> LcsTable(const std::vector<std::string>& a,
                                       const std::vector<std::string>& b) {
  std::vector<std::vector<int>> table(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      table[i][j] = a[i - 1] == b[j - 1] ? table[i - 1][j - 1] + 1
                                         : std::max(table[i - 1][j], table[i][j - 1]);
    }
  }
  return table;
}

// Positions in `target` of one LCS with `prediction`. Which LCS matters for rougeLsum's
// union, so the walk breaks ties as rouge_score's _backtrack_norec does: on a mismatch
// it moves left in the prediction only when that cell is strictly larger.
std::vector<size_t> LcsTargetPositions(const std::vector<std::string>& target,
                                       const std::vector<std::string>& prediction) {
  const auto table = LcsTable(target, prediction);
  std::vector<size_t> positions;
  size_t i = target.size(), j = prediction.size();
  while (i > 0 && j > 0) {
    if (target[i - 1] == prediction[j - 1]) {
      positions.push_back(i - 1);
      --i;
      --j;
    } else if (table[i][j - 1] > table[i - 1][j]) {
      --j;
    } else {
      --i;
    }
  }
  std::reverse(positions.begin(), positions.end());
  return positions;
}

std::vector<std::string> SplitNonEmptyLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (end > start) lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
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

RougeScore RougeLsumOnSentences(const std::vector<std::vector<std::string>>& target,
                                const std::vector<std::vector<std::string>>& prediction) {
  if (target.empty() || prediction.empty()) return RougeScore{};
  std::map<std::string, int> target_left, prediction_left;
  double target_tokens = 0, prediction_tokens = 0;
  for (const auto& sentence : target) {
    target_tokens += static_cast<double>(sentence.size());
    for (const auto& token : sentence) ++target_left[token];
  }
  for (const auto& sentence : prediction) {
    prediction_tokens += static_cast<double>(sentence.size());
    for (const auto& token : sentence) ++prediction_left[token];
  }
  if (target_tokens == 0 || prediction_tokens == 0) return RougeScore{};
  double hits = 0;
  for (const auto& target_sentence : target) {
    std::set<size_t> covered;  // ordered: hits are taken in target order
    for (const auto& prediction_sentence : prediction) {
      for (size_t p : LcsTargetPositions(target_sentence, prediction_sentence)) covered.insert(p);
    }
    for (size_t p : covered) {
      const std::string& token = target_sentence[p];
      int& in_prediction = prediction_left[token];
      int& in_target = target_left[token];
      if (in_prediction > 0 && in_target > 0) {
        hits += 1;
        --in_prediction;
        --in_target;
      }
    }
  }
  return FromCounts(hits, target_tokens, prediction_tokens);
}

RougeScore RougeN(std::string_view target, std::string_view prediction, int n, bool use_stemmer) {
  return RougeNOnTokens(RougeTokenize(target, use_stemmer), RougeTokenize(prediction, use_stemmer),
                        n);
}

RougeScore RougeL(std::string_view target, std::string_view prediction, bool use_stemmer) {
  return RougeLOnTokens(RougeTokenize(target, use_stemmer), RougeTokenize(prediction, use_stemmer));
}

RougeScore RougeLsum(std::string_view target, std::string_view prediction, bool use_stemmer) {
  auto tokenize_sentences = [use_stemmer](std::string_view text) {
    std::vector<std::vector<std::string>> sentences;
    for (const std::string& line : SplitNonEmptyLines(text)) {
      sentences.push_back(RougeTokenize(line, use_stemmer));
    }
    return sentences;
  };
  return RougeLsumOnSentences(tokenize_sentences(target), tokenize_sentences(prediction));
}

const char* RougeTypeName(RougeType type) {
  switch (type) {
    case RougeType::kRouge1:
      return "rouge1";
    case RougeType::kRouge2:
      return "rouge2";
    case RougeType::kRougeL:
      return "rougeL";
    case RougeType::kRougeLsum:
      return "rougeLsum";
  }
  return "";
}

RougeScore Rouge(RougeType type, std::string_view target, std::string_view prediction,
                 bool use_stemmer) {
  switch (type) {
    case RougeType::kRouge1:
      return RougeN(target, prediction, 1, use_stemmer);
    case RougeType::kRouge2:
      return RougeN(target, prediction, 2, use_stemmer);
    case RougeType::kRougeL:
      return RougeL(target, prediction, use_stemmer);
    case RougeType::kRougeLsum:
      return RougeLsum(target, prediction, use_stemmer);
  }
  return RougeScore{};
}

double RougeFMaxOverReferences(RougeType type, std::string_view prediction,
                               absl::Span<const std::string> references, bool use_stemmer) {
  double best = 0.0;
  for (const std::string& reference : references) {
    best = std::max(best, Rouge(type, reference, prediction, use_stemmer).fmeasure);
  }
  return best;
}

}  // namespace hgeval::metrics
