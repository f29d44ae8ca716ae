// Runs model work for RPC handlers and jobs: answers what the result store already
// holds, sends only the missing (deduplicated) requests to the model's scheduler, waits
// (honouring cancellation and deadlines) and writes the new results to the store.
#ifndef HGEVAL_SERVER_EXEC_EXECUTOR_H_
#define HGEVAL_SERVER_EXEC_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "engine/runtime/scoring.h"
#include "server/core/request_prep.h"
#include "server/core/result_codec.h"
#include "server/exec/model_registry.h"
#include "server/store/result_store.h"

namespace hgeval::server {

// How a caller's wait is cut short.
struct CallControl {
  std::function<bool()> cancelled;  // polled while waiting; may be empty
  absl::Time deadline = absl::InfiniteFuture();
  // Set by the server when its shutdown grace has run out: waits end with UNAVAILABLE.
  const std::atomic<bool>* server_stopping = nullptr;
  // Called (possibly from another thread) with the number of computed pairs whose results
  // are final and, where there is a store, stored: what a killed job keeps. May be empty.
  std::function<void(int64_t pairs)> pairs_kept;
};

struct ScoreOutcome {
  // One per input pair; token_logprobs always filled, top_k when asked.
  std::vector<PairScore> results;
  int64_t cached = 0;        // answered from the store
  int64_t computed = 0;      // distinct pairs computed now
  double store_seconds = 0;  // reading and writing the result store
};

// Computes pairs that the store does not hold (distinct, in the order given): fills
// `results` (one per pair) and may call `finished(indices)` for pairs whose results are
// final before it returns, so they are stored early (a killed job loses little).
using FinishedPairs = std::function<absl::Status(absl::Span<const size_t> indices)>;
using PairScorer =
    std::function<absl::Status(const std::vector<TokenPair>& pairs, int top_k,
                               std::vector<ScoreResult>* results, const FinishedPairs& finished)>;

class Executor {
 public:
  // `store` may be null (no caching).
  explicit Executor(ResultStore* store) : store_(store) {}

  // Answers from the store what it holds and computes the rest with `scorer` (empty: the
  // model's scheduler, where RPC work from every client is packed together).
  absl::StatusOr<ScoreOutcome> ScorePairs(LoadedModel& model, const std::vector<TokenPair>& pairs,
                                          int top_k, bool use_store, const CallControl& control,
                                          const PairScorer& scorer = nullptr);

  // LRA classification (kind "classify" in the store, keyed by the converted inputs):
  // stored results are answered, the rest go to the model's classify scheduler and are
  // stored. `cached`, when given, receives how many came from the store.
  absl::StatusOr<std::vector<Classification>> Classify(LoadedModel& model,
                                                       const std::vector<LraInput>& inputs,
                                                       bool use_store, const CallControl& control,
                                                       int64_t* cached = nullptr);

  ResultStore* store() const { return store_; }

 private:
  ResultStore* store_;
};

// Scores `pairs` on the model's scheduler as one prefix tree with context reuse (how a
// job scores its loglikelihood requests: the evaluator's numbers, through the same
// scheduler thread and scorer as every RPC): fills `results` (one per pair) and calls
// `finished` as batches finish (on the scheduler thread, while this call waits).
// `tokens_fed` (optional) receives the tokens the model was fed.
absl::Status ScoreWithReuseOnScheduler(LoadedModel& model, const std::vector<TokenPair>& pairs,
                                       const CallControl& control,
                                       std::vector<ScoreResult>* results,
                                       const FinishedPairs& finished, int64_t* tokens_fed);

// Waits until `done` under `mu`, polling control.cancelled every few milliseconds.
// Returns CANCELLED / DEADLINE_EXCEEDED / UNAVAILABLE (server stopping) when cut short
// (done stays false).
absl::Status WaitDone(absl::Mutex& mu, const bool& done, const CallControl& control);

// Submits `work` to `scheduler` and waits until it is done (WaitDone), marking it
// cancelled when the wait is cut short. OK means done: the work's own status says how it
// went.
template <typename Scheduler, typename Work>
absl::Status SubmitAndWait(Scheduler& scheduler, const std::shared_ptr<Work>& work,
                           const CallControl& control) {
  if (absl::Status s = scheduler.Submit(work); !s.ok()) return s;
  if (absl::Status s = WaitDone(work->mu, work->done, control); !s.ok()) {
    work->cancelled = true;
    return s;
  }
  return absl::OkStatus();
}

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_EXEC_EXECUTOR_H_
