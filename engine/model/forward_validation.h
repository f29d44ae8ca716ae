// The one check of a Forward batch, shared by every family on both backends: what a
// caller may ask of Model::Forward (model.h), independent of how a backend runs it.
#ifndef HGEVAL_ENGINE_MODEL_FORWARD_VALIDATION_H_
#define HGEVAL_ENGINE_MODEL_FORWARD_VALIDATION_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/model/model.h"

namespace hgeval {

// INVALID_ARGUMENT, naming the item, unless: there are as many outputs as items; each
// item has exactly one of `state` and `start`; `targets` is empty or as long as
// `tokens`; an item that feeds no token asks for nothing (last log-probs, last argmax,
// all logits); token ids lie in [0, vocab) and target ids in [-1, vocab) (-1: not
// scored); top_k >= 0; and, when max_context > 0, the state's position plus the tokens
// fed stays within max_context. Checks every item before the caller changes anything.
absl::Status ValidateForwardItems(absl::Span<const ForwardItem> items, size_t num_outputs,
                                  int64_t vocab, int64_t max_context = 0);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_FORWARD_VALIDATION_H_
