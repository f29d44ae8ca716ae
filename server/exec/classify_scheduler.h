// One scheduler thread per LRA classifier model: the Classify work of every client and
// job is merged into rounds of at most `max_batch_positions` positions, each one
// LraClassifier::Classify call (an example's logits never depend on its round). Work
// whose caller cancelled or whose deadline passed is dropped before it runs. The queue is
// bounded: Submit fails with RESOURCE_EXHAUSTED when full.
#ifndef HGEVAL_SERVER_EXEC_CLASSIFY_SCHEDULER_H_
#define HGEVAL_SERVER_EXEC_CLASSIFY_SCHEDULER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/model/lra_classifier.h"
#include "server/exec/work_queue.h"

namespace hgeval::server {

struct ClassifyWork {
  std::vector<LraInput> inputs;
  absl::Time deadline = absl::InfiniteFuture();
  std::atomic<bool> cancelled{false};

  absl::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::Status status ABSL_GUARDED_BY(mu);
  std::vector<std::vector<float>> logits ABSL_GUARDED_BY(mu);

  int64_t positions() const;
  // WorkQueue's measures: the bound counts examples, a round's budget positions.
  int64_t units() const { return static_cast<int64_t>(inputs.size()); }
  int64_t cost() const { return positions(); }
};

struct ClassifySchedulerOptions {
  int64_t max_batch_positions = 65536;  // positions (tokens or pixels) per round
  int64_t max_queued_examples = 16384;
};

struct ClassifySchedulerStats {
  int64_t rounds = 0;
  int64_t examples = 0;
  int64_t max_round_works = 0;  // most calls merged into one round
};

class ClassifyScheduler {
 public:
  // `model` is not owned. Starts the thread.
  ClassifyScheduler(std::string name, const LraClassifier* model, ClassifySchedulerOptions options);
  ~ClassifyScheduler();  // Stop()s

  absl::Status Submit(std::shared_ptr<ClassifyWork> work);
  // Fails queued work with UNAVAILABLE and joins the thread.
  void Stop();
  ClassifySchedulerStats stats() const;

 private:
  void Loop();
  void RunRound(std::vector<std::shared_ptr<ClassifyWork>> works);

  const std::string name_;
  const LraClassifier* const model_;
  const ClassifySchedulerOptions options_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  WorkQueue<ClassifyWork> queue_ ABSL_GUARDED_BY(mu_);
  ClassifySchedulerStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_EXEC_CLASSIFY_SCHEDULER_H_
