// One scheduler thread per model: merges the work of every client into packed batches.
// A job's scoring (context reuse, ScoreWork::context_reuse) runs here too, one batch
// between the other rounds, so every route scores through this thread and the one scorer.
// Scoring work from many calls is packed into Score() calls (and so into Model::Forward
// calls of bounded token count); generations live in one DecodeBatch that new sequences
// join between decode steps (continuous batching). Scoring batches and decode steps
// alternate so neither starves. Queues are bounded: Submit fails with
// RESOURCE_EXHAUSTED when full (backpressure). Work whose caller cancelled or whose
// deadline passed is dropped before it runs; a cancelled generation leaves the batch at
// the next step without disturbing the other sequences.
#ifndef HGEVAL_SERVER_EXEC_SCHEDULER_H_
#define HGEVAL_SERVER_EXEC_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/model/model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/prefix_scoring.h"
#include "engine/runtime/scoring.h"
#include "engine/tokenizer/tokenizer.h"
#include "server/exec/work_queue.h"

namespace hgeval::server {

// Whether `status` is a scheduler's "queue full" (backpressure: retry later), as opposed to
// other RESOURCE_EXHAUSTED errors such as a request that does not fit the memory budget.
bool IsQueueFull(const absl::Status& status);

// Scoring work of one call. The caller waits on `mu` for `done`.
struct ScoreWork {
  std::vector<ScoreRequest> requests;
  absl::Time deadline = absl::InfiniteFuture();
  std::atomic<bool> cancelled{false};
  // A job's requests: scored as one prefix tree with context reuse (the evaluator's
  // numbers), a batch at a time between the other works' rounds and decode steps, instead
  // of packed with other calls. `finished` (called on the scheduler thread) sees each
  // batch's finished requests, so a job stores its results as they come.
  bool context_reuse = false;
  std::function<absl::Status(absl::Span<const size_t> finished,
                             absl::Span<const ScoreResult> results)>
      finished;

  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  std::vector<ScoreResult> results ABSL_GUARDED_BY(mu);
  PrefixScoreStats stats ABSL_GUARDED_BY(mu);  // a context-reuse work's, when done

  int64_t tokens() const;
  // WorkQueue's measures: the bound counts requests, a round's budget tokens.
  int64_t units() const { return static_cast<int64_t>(requests.size()); }
  int64_t cost() const { return tokens(); }
};

// One generation. The scheduler appends tokens as they are produced.
struct GenerateWork {
  GenerateRequest request;
  absl::Time deadline = absl::InfiniteFuture();
  std::atomic<bool> cancelled{false};

  absl::Mutex mu;
  std::vector<int32_t> tokens ABSL_GUARDED_BY(mu);  // generated so far
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  GenerateResult result ABSL_GUARDED_BY(mu);  // when done
};

struct SchedulerOptions {
  // Most tokens fed per scoring round (and per Model::Forward call).
  int64_t max_batch_tokens = 0;  // 0: the model's ModelInfo::batch_tokens
  // Bound on queued scoring requests (pairs/windows) not yet started.
  int64_t max_queued_requests = 16384;
  // Bound on generations queued or running.
  int64_t max_generations = 256;
};

struct SchedulerStats {
  int64_t score_rounds = 0;
  int64_t scored_requests = 0;
  int64_t tokens_fed = 0;
  int64_t decode_steps = 0;
  int64_t generated_tokens = 0;
  int64_t max_live_generations = 0;   // largest decode batch seen
  int64_t max_score_round_works = 0;  // most calls merged into one scoring round
};

class ModelScheduler {
 public:
  // Neither pointer is owned. Starts the thread.
  ModelScheduler(std::string name, Model* model, const Tokenizer* tokenizer,
                 SchedulerOptions options);
  ~ModelScheduler();  // Stop()s

  absl::Status Submit(std::shared_ptr<ScoreWork> work);
  absl::Status Submit(std::shared_ptr<GenerateWork> work);
  // Fails queued and running work with UNAVAILABLE and joins the thread.
  void Stop();

  SchedulerStats stats() const;

 private:
  struct LiveGeneration {
    std::shared_ptr<GenerateWork> work;
    int64_t id = 0;
    size_t delivered = 0;
  };

  // A context-reuse work in progress.
  struct ReuseWork {
    std::shared_ptr<ScoreWork> work;
    std::unique_ptr<PrefixScorer> scorer;
  };

  void Loop();
  void RunScoreRound(const std::vector<std::shared_ptr<ScoreWork>>& works);
  // One unit of the context-reuse work in progress (starting the next queued one).
  void StepReuseWork();
  void FinishReuseWork(const absl::Status& status);
  void RunDecodeStep();
  void Finish(LiveGeneration& live, absl::Status status);

  const std::string name_;
  Model* const model_;
  const Tokenizer* const tokenizer_;
  const SchedulerOptions options_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  WorkQueue<ScoreWork> score_queue_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<GenerateWork>> generate_queue_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<ScoreWork>> reuse_queue_ ABSL_GUARDED_BY(mu_);
  bool reuse_active_ ABSL_GUARDED_BY(mu_) = false;
  int64_t generations_ ABSL_GUARDED_BY(mu_) = 0;  // queued + live
  SchedulerStats stats_ ABSL_GUARDED_BY(mu_);

  // Used by the scheduler thread only.
  DecodeBatch decode_;
  std::vector<LiveGeneration> live_;
  ReuseWork reuse_;

  std::thread thread_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_EXEC_SCHEDULER_H_
