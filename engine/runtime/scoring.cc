#include "engine/runtime/scoring.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

// The fed tokens and targets of one request (see ScoreRequest).
struct PreparedRequest {
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets;
  std::unique_ptr<SequenceState> state;
};

absl::StatusOr<PreparedRequest> Prepare(const Model& model, const ScoreRequest& request) {
  PreparedRequest p;
  p.tokens = request.context;
  p.tokens.insert(p.tokens.end(), request.continuation.begin(), request.continuation.end() - 1);
  p.targets.assign(request.context.size() - 1, -1);
  p.targets.insert(p.targets.end(), request.continuation.begin(), request.continuation.end());
  HG_ASSIGN_OR_RETURN(p.state, StartState(model, request.start));
  return p;
}

ScoreResult Collect(const ScoreRequest& request, const ForwardOutput& out) {
  ScoreResult r;
  const size_t first = request.context.size() - 1;
  const size_t n = request.continuation.size();
  r.token_logprobs.resize(n);
  r.greedy_tokens.resize(n);
  if (request.top_k > 0) r.top_k.resize(n);
  for (size_t j = 0; j < n; ++j) {
    r.token_logprobs[j] = out.logprob[first + j];
    r.greedy_tokens[j] = out.argmax[first + j];
    r.logprob += static_cast<double>(out.logprob[first + j]);
    r.is_greedy = r.is_greedy && out.is_greedy[first + j] != 0;
    if (request.top_k > 0) r.top_k[j] = out.top_k[first + j];
  }
  return r;
}

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
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].context.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("score request ", i,
                       ": the context must hold at least one token (use BOS or the "
                       "last token of a forked prefix)"));
    }
    if (requests[i].continuation.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("score request ", i, ": the continuation is empty"));
    }
  }
  std::vector<ScoreResult> results(requests.size());
  size_t begin = 0;
  while (begin < requests.size()) {
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError("scoring cancelled");
    }
    // Pack consecutive requests up to the token budget (at least one).
    size_t end = begin;
    int64_t tokens = 0;
    const int64_t budget = BatchTokens(model, options.max_batch_tokens);
    while (end < requests.size()) {
      const int64_t n = static_cast<int64_t>(requests[end].context.size() +
                                             requests[end].continuation.size() - 1);
      if (end > begin && tokens + n > budget) break;
      tokens += n;
      ++end;
    }
    std::vector<PreparedRequest> prepared;
    prepared.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
      HG_ASSIGN_OR_RETURN(PreparedRequest p, Prepare(model, requests[i]));
      prepared.push_back(std::move(p));
    }
    std::vector<ForwardItem> items(prepared.size());
    for (size_t j = 0; j < prepared.size(); ++j) {
      items[j].tokens = prepared[j].tokens;
      items[j].targets = prepared[j].targets;
      items[j].state = prepared[j].state.get();
      items[j].top_k = requests[begin + j].top_k;
    }
    std::vector<ForwardOutput> outputs(items.size());
    HG_RETURN_IF_ERROR(model.Forward(items, absl::MakeSpan(outputs)));
    for (size_t j = 0; j < prepared.size(); ++j) {
      results[begin + j] = Collect(requests[begin + j], outputs[j]);
    }
    begin = end;
  }
  return results;
}

absl::StatusOr<std::unique_ptr<SequenceState>> Prefill(Model& model,
                                                       absl::Span<const int32_t> tokens,
                                                       const SequenceState* start) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<SequenceState> state, StartState(model, start));
  HG_RETURN_IF_ERROR(Advance(model, tokens, state.get()));
  return state;
}

absl::StatusOr<std::vector<std::unique_ptr<SequenceState>>> PrefillWithSnapshots(
    Model& model, absl::Span<const int32_t> tokens, absl::Span<const int64_t> positions,
    const SequenceState* start) {
  std::vector<std::unique_ptr<SequenceState>> snapshots;
  snapshots.reserve(positions.size());
  HG_ASSIGN_OR_RETURN(std::unique_ptr<SequenceState> state, StartState(model, start));
  int64_t fed = 0;
  for (int64_t position : positions) {
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
