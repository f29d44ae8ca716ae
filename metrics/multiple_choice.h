// Multiple-choice scoring as lm-evaluation-harness does it (lm_eval/api/task.py
// process_results, multiple_choice branch): argmax with ties to the first index,
// acc_norm dividing by the choice's length in Unicode code points (Python len(str)).
#ifndef HGEVAL_METRICS_MULTIPLE_CHOICE_H_
#define HGEVAL_METRICS_MULTIPLE_CHOICE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/types/span.h"

namespace hgeval::metrics {

// np.argmax: the first maximal index (the first NaN if any); -1 for an empty input.
int64_t ArgmaxFirst(absl::Span<const double> values);

// Python len() of a UTF-8 string: code points (invalid bytes count one each).
int64_t CodePointLength(std::string_view utf8);

// 1.0 when argmax(loglikelihoods) == gold, else 0.0.
double Acc(absl::Span<const double> loglikelihoods, int64_t gold);
// 1.0 when argmax(ll_i / len(choice_i)) == gold (len in code points, no delimiter).
double AccNorm(absl::Span<const double> loglikelihoods, absl::Span<const std::string> choices,
               int64_t gold);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_MULTIPLE_CHOICE_H_
