// The one scorer: log-likelihoods of (context, continuation) requests on Model::Forward,
// used by the evaluator, server jobs, the server's scheduler and hgeval-engine alike.
//
// With context reuse, the requests' contexts form one prefix tree over the whole call
// (identical requests are scored once): a shared prefix is fed once and every request
// under it scores its own tail from that state, read-only. Memory is bounded in bytes,
// not tokens: the tree is walked in waves whose held prefix states fit a share of the
// model's memory budget (Model::StateBytes), and what each Forward batch's forks hold
// (Model::ReadOnlyForkBytes: a copy of their prefix state where the backend makes one,
// nothing where it reads the state in place) fits the rest. A prefix state dropped between waves is
// recomputed from its parent when a later wave needs it, and a batch that still does not fit runs
// in halves. Since every node is fed from its parent's state and the engine's results do not depend
// on the batch, the numbers are the same for any budget: only the speed changes.
#ifndef HGEVAL_ENGINE_RUNTIME_PREFIX_SCORING_H_
#define HGEVAL_ENGINE_RUNTIME_PREFIX_SCORING_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/model.h"
#include "engine/runtime/scoring.h"

namespace hgeval {

struct PrefixScoreOptions {
  // Run shared context prefixes once and fork (false: every request on its own, from
  // its `start` or an empty state).
  bool context_reuse = true;
  // With context_reuse: share the continuations' prefixes too. The tree is built over
  // every fed token (context ++ continuation[:-1]), not only the contexts, and a shared
  // node scores its own positions for every request under it (the requests under a node
  // need the same top_k). For requests whose scored part is most of their tokens, such as
  // echo prompts scored from their first token (the server's completions route). The
  // results are those of scoring each request alone wherever a forked state equals a
  // scratch run bitwise (the CPU backend; docs/cpu.md).
  bool share_continuations = false;
  // Tokens per Model::Forward call; 0: the model's ModelInfo::batch_tokens.
  int64_t max_batch_tokens = 0;
  // Bytes of the model's memory the call may hold in states at once; 0: most of what the
  // model's budget can give when the call starts (of the host's available memory where
  // the model has no bounded budget). A value above what a bounded budget can give is
  // planned with as given; batches that then do not fit are halved.
  size_t state_bytes = 0;
  // Count tokens without running the model (results hold zeros).
  bool count_only = false;
  // Polled before each Forward call: true stops with CANCELLED.
  std::function<bool()> cancelled;
  // Requests finished so far (identical requests count each), of all.
  std::function<void(int64_t done, int64_t total)> progress;
  // After each Forward batch: the indices of the distinct requests it finished (identical
  // requests are reported once, by their first index), their results final in `results`.
  // An error stops the call.
  std::function<absl::Status(absl::Span<const size_t> finished,
                             absl::Span<const ScoreResult> results)>
      finished;
};

struct PrefixScoreStats {
  int64_t tokens_fed = 0;         // every token fed, recomputed prefixes included
  int64_t tokens_scored = 0;      // continuation tokens
  double state_seconds = 0;       // creating, copying and dropping states
  int64_t waves = 0;              // passes over the tree under the byte bound
  int64_t dropped_states = 0;     // prefix states dropped early to make room
  int64_t recomputed_states = 0;  // prefix states fed again after being dropped
  int64_t split_batches = 0;      // batches halved because they did not fit
  size_t state_bytes_bound = 0;   // the byte bound in force
};

// The scorer, one unit of model work at a time (the server's scheduler interleaves a
// job's scoring with other clients' rounds and decode steps this way).
class PrefixScorer {
 public:
  // `requests` must outlive the scorer.
  PrefixScorer(Model& model, absl::Span<const ScoreRequest> requests, PrefixScoreOptions options);
  ~PrefixScorer();
  PrefixScorer(const PrefixScorer&) = delete;
  PrefixScorer& operator=(const PrefixScorer&) = delete;

  // Checks the requests and builds the prefix tree (no model work).
  absl::Status Start();
  // The next unit: the prefix states of the next wave, or one batch of its requests.
  // True once every request is scored.
  absl::StatusOr<bool> Step();
  // After Step() gave true: the results, in request order.
  std::vector<ScoreResult> TakeResults();
  const PrefixScoreStats& stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Scores `requests` (each needs a non-empty context and continuation; a request with
// `start` continues that state and takes no part in the tree) with a PrefixScorer run to
// the end. Results are in request order.
absl::StatusOr<std::vector<ScoreResult>> ScoreWithPrefixReuse(
    Model& model, absl::Span<const ScoreRequest> requests, const PrefixScoreOptions& options,
    PrefixScoreStats* stats = nullptr);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_RUNTIME_PREFIX_SCORING_H_
