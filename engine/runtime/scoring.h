// Scoring on top of Model::Forward: log-likelihoods of continuations, prefill and
// snapshots. Packs many requests into batches of bounded token count.
#ifndef HGEVAL_ENGINE_RUNTIME_SCORING_H_
#define HGEVAL_ENGINE_RUNTIME_SCORING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/model.h"

namespace hgeval {

// Scores `continuation` after `context`, optionally continuing a snapshot. The fed tokens
// are context ++ continuation[:-1]; context must hold at least one token (for a fork,
// run the shared prefix without its last token, snapshot, and pass that last token as
// the context of every branch).
struct ScoreRequest {
  const SequenceState* start = nullptr;  // only read: the request continues a copy of it
  std::vector<int32_t> context;
  std::vector<int32_t> continuation;
  int top_k = 0;
};

struct ScoreResult {
  double logprob = 0.0;  // sum over the continuation, accumulated in double
  bool is_greedy = true;
  std::vector<float> token_logprobs;
  std::vector<int32_t> greedy_tokens;
  std::vector<std::vector<TokenLogprob>> top_k;  // per continuation token, if asked
};

struct ScoreOptions {
  // Upper bound on tokens fed per Model::Forward call (a single longer request still
  // runs, alone); 0: the model's ModelInfo::batch_tokens.
  int64_t max_batch_tokens = 0;
  // Polled before each Model::Forward call; when it returns true, Score stops with
  // CANCELLED (a caller that went away does not keep the model busy). May be empty.
  std::function<bool()> cancelled;
};

// Each request on its own (no context reuse): ScoreWithPrefixReuse
// (engine/runtime/prefix_scoring.h), the one scorer, with context_reuse off.
absl::StatusOr<std::vector<ScoreResult>> Score(Model& model,
                                               absl::Span<const ScoreRequest> requests,
                                               const ScoreOptions& options = {});

// The state after feeding `tokens` to `start` (cloned) or to an empty state.
absl::StatusOr<std::unique_ptr<SequenceState>> Prefill(Model& model,
                                                       absl::Span<const int32_t> tokens,
                                                       const SequenceState* start = nullptr);

// Snapshots after each prefix length in `positions` (ascending, each in
// [0, tokens.size()]), feeding each token once. `cancelled` is polled before each
// segment; true stops it with CANCELLED.
absl::StatusOr<std::vector<std::unique_ptr<SequenceState>>> PrefillWithSnapshots(
    Model& model, absl::Span<const int32_t> tokens, absl::Span<const int64_t> positions,
    const SequenceState* start = nullptr, const std::function<bool()>& cancelled = nullptr);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_RUNTIME_SCORING_H_
