// A check both backends' tests share: ForwardItem::want_all_logits returns the raw logits
// of every fed position, consistent with the scored log-probabilities of the same tokens.
#ifndef HGEVAL_TESTS_SUPPORT_ALL_LOGITS_CHECK_H_
#define HGEVAL_TESTS_SUPPORT_ALL_LOGITS_CHECK_H_

#include <cstdint>
#include <vector>

#include "engine/model/model.h"

namespace hgeval::testing {

// `all` came from an item with want_all_logits, `scored` from the same tokens and
// `targets` without it: all.logits holds targets.size() rows of `vocab` raw logits (not
// log-probabilities) whose logit - logsumexp at each target is within `tolerance` of
// scored.logprob; `scored` holds no logits. Failures are gtest expectations.
void ExpectRawLogitsOfEveryPosition(const ForwardOutput& all, const ForwardOutput& scored,
                                    const std::vector<int32_t>& targets, int64_t vocab,
                                    double tolerance);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SUPPORT_ALL_LOGITS_CHECK_H_
