#include "metrics/scrolls_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "metrics/rouge.h"
#include "metrics/squad.h"

namespace hgeval::metrics {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// 100 * sum(best score per pair) / n, summed in pair order as Python's sum() does.
double MeanTimes100(
    absl::Span<const std::string> predictions,
    absl::Span<const std::vector<std::string>> references,
    const std::function<double(const std::string&, const std::vector<std::string>&)>& best) {
  if (predictions.empty() || predictions.size() != references.size()) return kNaN;
  double sum = 0.0;
  for (size_t i = 0; i < predictions.size(); ++i) sum += best(predictions[i], references[i]);
  return 100.0 * sum / static_cast<double>(predictions.size());
}

}  // namespace

double PythonRound(double x, int digits) {
  if (!std::isfinite(x)) return x;
  // glibc's printf rounds the exact binary value correctly (ties to even), which is
  // what CPython's round() does through its own correctly rounded dtoa.
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, x);
  return std::strtod(buffer, nullptr);
}

ScrollsRougeScores ScrollsRouge(absl::Span<const std::string> predictions,
                                absl::Span<const std::vector<std::string>> references) {
  ScrollsRougeScores out;
  if (predictions.empty() || predictions.size() != references.size()) {
    out.rouge1 = out.rouge2 = out.rougeL = out.geometric_mean = kNaN;
    return out;
  }
  // scrolls.py: each key's F-measure x100 per pair, the max over references, then the
  // mean over pairs (sum / n).
  double sums[3] = {0.0, 0.0, 0.0};
  const RougeType types[3] = {RougeType::kRouge1, RougeType::kRouge2, RougeType::kRougeL};
  for (size_t i = 0; i < predictions.size(); ++i) {
    for (int t = 0; t < 3; ++t) {
      double best = -std::numeric_limits<double>::infinity();
      for (const std::string& reference : references[i]) {
        best = std::max(best, Rouge(types[t], reference, predictions[i], false).fmeasure * 100);
      }
      sums[t] += references[i].empty() ? 0.0 : best;
    }
  }
  const double n = static_cast<double>(predictions.size());
  const double r1 = sums[0] / n, r2 = sums[1] / n, rl = sums[2] / n;
  out.rouge1 = PythonRound(r1, 4);
  out.rouge2 = PythonRound(r2, 4);
  out.rougeL = PythonRound(rl, 4);
  out.geometric_mean = PythonRound(std::pow(r1 * r2 * rl, 1.0 / 3.0), 4);
  return out;
}

double ScrollsF1(absl::Span<const std::string> predictions,
                 absl::Span<const std::vector<std::string>> references) {
  return PythonRound(MeanTimes100(predictions, references,
                                  [](const std::string& p, const std::vector<std::string>& r) {
                                    return SquadF1MaxOverReferences(p, r);
                                  }),
                     4);
}

double ScrollsExactMatch(absl::Span<const std::string> predictions,
                         absl::Span<const std::vector<std::string>> references) {
  return PythonRound(MeanTimes100(predictions, references,
                                  [](const std::string& p, const std::vector<std::string>& r) {
                                    return SquadExactMatchMaxOverReferences(p, r);
                                  }),
                     4);
}

}  // namespace hgeval::metrics
