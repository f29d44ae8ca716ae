#include "metrics/niah_scoring.h"

#include <string>
#include <string_view>
#include <vector>

#include "metrics/rouge.h"

namespace hgeval::metrics {

double NiahRouge1Score(std::string_view expected_answer, std::string_view generated,
                       bool use_stemmer) {
  return 10.0 * RougeN(expected_answer, generated, 1, use_stemmer).fmeasure;
}

double NiahKeyPhraseScore(const std::vector<std::string>& key_phrases, std::string_view generated) {
  if (key_phrases.empty()) return 0.0;
  // Surrounding spaces make the substring test match whole tokens only.
  std::string haystack = " ";
  for (const std::string& token : RougeTokenize(generated, /*use_stemmer=*/false)) {
    haystack += token + " ";
  }
  int found = 0;
  for (const std::string& phrase : key_phrases) {
    std::string needle = " ";
    for (const std::string& token : RougeTokenize(phrase, /*use_stemmer=*/false)) {
      needle += token + " ";
    }
    if (needle.size() > 1 && haystack.find(needle) != std::string::npos) ++found;
  }
  return 10.0 * found / static_cast<double>(key_phrases.size());
}

}  // namespace hgeval::metrics
