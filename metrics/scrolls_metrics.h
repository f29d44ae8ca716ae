// SCROLLS' corpus-level scores as its metric script (tau/scrolls metrics/scrolls.py)
// computes them over all (prediction, references) pairs of a task: per pair the best
// score over the references, the mean over pairs, x100, each value rounded to 4
// decimals. lm-eval's scrolls tasks report these numbers (rouge1/2/L, f1) unchanged.
#ifndef HGEVAL_METRICS_SCROLLS_METRICS_H_
#define HGEVAL_METRICS_SCROLLS_METRICS_H_

#include <string>
#include <vector>

#include "absl/types/span.h"

namespace hgeval::metrics {

// Python's round(x, digits): the correctly rounded decimal of the exact binary value,
// ties to even. NaN and infinities come back unchanged.
double PythonRound(double x, int digits);

struct ScrollsRougeScores {
  double rouge1 = 0.0;
  double rouge2 = 0.0;
  double rougeL = 0.0;
  // (R1 * R2 * RL)^(1/3) of the unrounded means: the official SCROLLS score of the
  // summarisation tasks.
  double geometric_mean = 0.0;
};

// rouge_score without stemming. SCROLLS first rewrites each text as its NLTK sentences
// joined by "\n"; that changes only rougeLsum (the tokenizer drops line breaks), which
// is not computed here. NaN fields for an empty corpus.
ScrollsRougeScores ScrollsRouge(absl::Span<const std::string> predictions,
                                absl::Span<const std::vector<std::string>> references);
// SQuAD token F1 and exact match, x100.
double ScrollsF1(absl::Span<const std::string> predictions,
                 absl::Span<const std::vector<std::string>> references);
double ScrollsExactMatch(absl::Span<const std::string> predictions,
                         absl::Span<const std::vector<std::string>> references);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_SCROLLS_METRICS_H_
