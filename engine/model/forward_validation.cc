#include "engine/model/forward_validation.h"

#include "absl/strings/str_cat.h"

namespace hgeval {

absl::Status ValidateForwardItems(absl::Span<const ForwardItem> items, size_t num_outputs,
                                  int64_t vocab, int64_t max_context) {
  if (items.size() != num_outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("Forward: ", items.size(), " items but ", num_outputs, " outputs"));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& item = items[i];
    if ((item.state != nullptr) + (item.start != nullptr) + (item.fresh_start ? 1 : 0) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i,
                       " needs exactly one of a state to advance, a start state and a fresh "
                       "start"));
    }
    if (!item.targets.empty() && item.targets.size() != item.tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat("Forward: item ", i, " has ",
                                                     item.tokens.size(), " tokens but ",
                                                     item.targets.size(), " targets"));
    }
    if (item.tokens.empty() &&
        (item.want_last_logprobs || item.want_last_argmax || item.want_all_logits)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i, " asks for log-probs but feeds no token"));
    }
    for (int32_t id : item.tokens) {
      if (id < 0 || id >= vocab) {
        return absl::InvalidArgumentError(absl::StrCat("Forward: item ", i, " has token id ", id,
                                                       " outside the vocabulary [0, ", vocab, ")"));
      }
    }
    for (int32_t id : item.targets) {
      if (id < -1 || id >= vocab) {
        return absl::InvalidArgumentError(absl::StrCat("Forward: item ", i, " has target id ", id,
                                                       " outside the vocabulary [0, ", vocab,
                                                       ") and not -1 (unscored)"));
      }
    }
    if (item.top_k < 0) {
      return absl::InvalidArgumentError(absl::StrCat("Forward: item ", i, " has top_k < 0"));
    }
    if (max_context > 0) {
      const SequenceState* read = item.state != nullptr ? item.state : item.start;
      const int64_t consumed = read == nullptr ? 0 : read->position();
      const int64_t end = consumed + static_cast<int64_t>(item.tokens.size());
      if (end > max_context) {
        return absl::InvalidArgumentError(absl::StrCat(
            "item ", i, ": ", consumed, " consumed + ", item.tokens.size(), " new tokens = ", end,
            " exceeds the model's maximum context of ", max_context,
            " tokens (LoadOptions::max_context; default max_position_embeddings)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace hgeval
