#include "metrics/multiple_choice.h"

#include <cmath>
#include <vector>

#include "engine/tokenizer/utf8.h"

namespace hgeval::metrics {

int64_t ArgmaxFirst(absl::Span<const double> values) {
  int64_t best = -1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isnan(values[i])) return static_cast<int64_t>(i);
    if (best < 0 || values[i] > values[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

int64_t CodePointLength(std::string_view utf8) {
  // A truncated or malformed sequence counts byte by byte (U+FFFD units).
  int64_t count = 0;
  for (size_t i = 0; i < utf8.size(); ++count) ::hgeval::utf8::NextCodePointLenient(utf8, &i);
  return count;
}

double Acc(absl::Span<const double> loglikelihoods, int64_t gold) {
  return ArgmaxFirst(loglikelihoods) == gold ? 1.0 : 0.0;
}

double AccNorm(absl::Span<const double> loglikelihoods, absl::Span<const std::string> choices,
               int64_t gold) {
  std::vector<double> normalized(loglikelihoods.size());
  for (size_t i = 0; i < loglikelihoods.size(); ++i) {
    const double len = i < choices.size() ? static_cast<double>(CodePointLength(choices[i])) : 0;
    normalized[i] = loglikelihoods[i] / len;
  }
  return ArgmaxFirst(normalized) == gold ? 1.0 : 0.0;
}

}  // namespace hgeval::metrics
