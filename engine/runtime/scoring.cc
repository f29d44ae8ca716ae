#include "engine/runtime/scoring.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/runtime/prefix_scoring.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

// Feeds tokens to `state` in place.
absl::Status Advance(Model& model, absl::Span<const int32_t> tokens, SequenceState* state) {
  if (tokens.empty()) return absl::OkStatus();
  ForwardItem item;
  item.tokens = tokens;
  item.state = state;
  ForwardOutput out;
  return model.Forward(absl::MakeConstSpan(&item, 1), absl::MakeSpan(&out, 1));
}

}  // namespace

absl::StatusOr<std::vector<ScoreResult>> Score(Model& model,
                                               absl::Span<const ScoreRequest> requests,
                                               const ScoreOptions& options) {
  PrefixScoreOptions each;
  each.context_reuse = false;
  each.max_batch_tokens = options.max_batch_tokens;
  each.cancelled = options.cancelled;
  return ScoreWithPrefixReuse(model, requests, each);
}

absl::StatusOr<std::unique_ptr<SequenceState>> Prefill(Model& model,
                                                       absl::Span<const int32_t> tokens,
                                                       const SequenceState* start) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<SequenceState> state,
                      StartStateFor(model, start, static_cast<int64_t>(tokens.size())));
  HG_RETURN_IF_ERROR(Advance(model, tokens, state.get()));
  return state;
}

absl::StatusOr<std::vector<std::unique_ptr<SequenceState>>> PrefillWithSnapshots(
    Model& model, absl::Span<const int32_t> tokens, absl::Span<const int64_t> positions,
    const SequenceState* start, const std::function<bool()>& cancelled) {
  std::vector<std::unique_ptr<SequenceState>> snapshots;
  snapshots.reserve(positions.size());
  // Room for every token up to the last snapshot at once: the state is not moved as it
  // grows.
  const int64_t last = positions.empty() ? 0 : positions.back();
  HG_ASSIGN_OR_RETURN(std::unique_ptr<SequenceState> state, StartStateFor(model, start, last));
  int64_t fed = 0;
  for (int64_t position : positions) {
    if (cancelled && cancelled()) return absl::CancelledError("cancelled");
    if (position < fed || position > static_cast<int64_t>(tokens.size())) {
      return absl::InvalidArgumentError(absl::StrCat("snapshot positions must ascend within [0, ",
                                                     tokens.size(), "]; got ", position));
    }
    HG_RETURN_IF_ERROR(Advance(model, tokens.subspan(fed, position - fed), state.get()));
    fed = position;
    HG_ASSIGN_OR_RETURN(std::unique_ptr<SequenceState> snapshot, CloneState(*state));
    snapshots.push_back(std::move(snapshot));
  }
  return snapshots;
}

}  // namespace hgeval
