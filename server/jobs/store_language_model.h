// tasks::LanguageModel for server jobs: lm-eval request semantics (the same request
// preparation as the ModelService RPCs), answers from the result store where it can and
// computes only missing requests, storing results as soon as they are computed (a killed
// job loses at most one batch or chunk). Everything runs on the model's scheduler:
// loglikelihood requests as one context-reuse work (the one scorer's prefix tree, a
// context fed once and its choices forked from its state), so a job feeds the tokens
// `hgeval-eval` feeds; rolling windows, token targets and generations in chunks.
#ifndef HGEVAL_SERVER_JOBS_STORE_LANGUAGE_MODEL_H_
#define HGEVAL_SERVER_JOBS_STORE_LANGUAGE_MODEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "tasks/api/language_model.h"
#include "tasks/models/engine_language_model.h"

namespace hgeval::server {

struct StoreLanguageModelOptions {
  bool add_special = false;      // BOS regime "tokenizer" (true) or "none"
  int64_t max_length = 0;        // 0: lm-eval's rule (max_position_embeddings, max_context, 2048)
  int64_t chunk_requests = 256;  // requests per scheduler submission / store write
  std::function<bool()> cancelled;  // the job's cancellation
};

class StoreLanguageModel : public tasks::LanguageModel {
 public:
  StoreLanguageModel(LoadedModel* model, Executor* executor, StoreLanguageModelOptions options);

  absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> Loglikelihood(
      absl::Span<const tasks::LoglikelihoodRequest> requests,
      const tasks::CallOptions& options = {}) override;
  absl::StatusOr<std::vector<tasks::RollingResult>> LoglikelihoodRolling(
      absl::Span<const tasks::RollingRequest> requests,
      const tasks::CallOptions& options = {}) override;
  absl::StatusOr<std::vector<tasks::GenerateUntilResult>> GenerateUntil(
      absl::Span<const tasks::GenerateUntilRequest> requests,
      const tasks::CallOptions& options = {}) override;
  // One scored pass per sequence with the top-1 token at every position; `logprob` is
  // NaN (only the argmax is asked of the scheduler).
  absl::StatusOr<std::vector<tasks::TokenTargetsResult>> ScoreTokenTargets(
      absl::Span<const tasks::TokenTargetsRequest> requests,
      const tasks::CallOptions& options = {}) override;

  tasks::LanguageModelInfo info() const override;
  tasks::LanguageModelStats stats() const override { return stats_; }
  void ResetStats() override { stats_ = {}; }

  int64_t max_length() const { return max_length_; }
  // Requests answered from the store / computed, since construction.
  int64_t cached() const { return cached_; }
  int64_t computed() const { return computed_; }
  // Wall time reading and writing the result store, and preparing (tokenizing) requests.
  double store_seconds() const { return store_seconds_; }
  double prepare_seconds() const { return prepare_seconds_; }

 private:
  // Scores pairs in chunks (with `top_k` alternatives per token); `done(n)` after each
  // chunk.
  absl::StatusOr<std::vector<PairScore>> ScoreChunked(const std::vector<TokenPair>& pairs,
                                                      const tasks::CallOptions& options,
                                                      const std::function<void(int64_t)>& done,
                                                      int top_k = 0);
  CallControl Control(const tasks::CallOptions& options) const;

  LoadedModel* model_;
  Executor* executor_;
  StoreLanguageModelOptions options_;
  int64_t max_length_ = 2048;
  tasks::LanguageModelStats stats_;
  std::atomic<int64_t> cached_{0};
  std::atomic<int64_t> computed_{0};
  double store_seconds_ = 0;
  double prepare_seconds_ = 0;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_STORE_LANGUAGE_MODEL_H_
