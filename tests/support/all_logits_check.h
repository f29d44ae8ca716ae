// A check both backends' tests share: ForwardItem::want_all_logits returns the raw logits
// of every fed position, consistent with the scored log-probabilities of the same tokens.
#ifndef HGEVAL_TESTS_SUPPORT_ALL_LOGITS_CHECK_H_
#define HGEVAL_TESTS_SUPPORT_ALL_LOGITS_CHECK_H_

#include <cstdint>
#include <vector>

#include "engine/model/model.h"

namespace hgeval::testing {

// Feeds `tokens` with `targets` from two fresh states in one Forward call, one item with
// want_all_logits, and expects: that item's logits hold tokens.size() rows of raw logits
// (not log-probabilities) whose logit - logsumexp at each target is within `tolerance`
// of the other item's log-probability; the other item holds no logits; both states
// advanced. Failures are gtest expectations.
void ExpectAllLogitsMatchScoring(Model& model, const std::vector<int32_t>& tokens,
                                 const std::vector<int32_t>& targets, double tolerance);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SUPPORT_ALL_LOGITS_CHECK_H_
