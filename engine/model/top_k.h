// The k most likely tokens of one row of logits, as every backend reports them
// (ForwardOutput::top_k): highest first, the lowest id first among equal logits.
#ifndef HGEVAL_ENGINE_MODEL_TOP_K_H_
#define HGEVAL_ENGINE_MODEL_TOP_K_H_

#include <vector>

#include "absl/types/span.h"
#include "engine/model/model.h"

namespace hgeval {

// min(k, row.size()) entries {id, row[id] - log_normalizer} (the difference taken in
// double, then rounded to float): pass the row's log-sum-exp for raw logits, 0 for a row
// that already holds log-probabilities. k <= 0 gives none.
std::vector<TokenLogprob> TopKLogprobs(absl::Span<const float> row, int k, double log_normalizer);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_TOP_K_H_
