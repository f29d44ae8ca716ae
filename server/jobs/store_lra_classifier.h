// tasks::LanguageModel for server jobs on an LRA classifier: `classify` requests are
// converted as the Classify RPC converts them (MakeLraDocument) and run through the
// Executor (result store, then the model's classify scheduler, so job traffic batches
// with client traffic), in chunks whose results are stored as soon as they are computed.
// Language-model requests are refused (UNIMPLEMENTED, saying why).
#ifndef HGEVAL_SERVER_JOBS_STORE_LRA_CLASSIFIER_H_
#define HGEVAL_SERVER_JOBS_STORE_LRA_CLASSIFIER_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "tasks/api/language_model.h"

namespace hgeval::server {

class StoreLraClassifier : public tasks::LanguageModel {
 public:
  // `model` must hold a classifier.
  StoreLraClassifier(LoadedModel* model, Executor* executor, std::function<bool()> cancelled,
                     int64_t chunk_examples = 64);

  absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> Loglikelihood(
      absl::Span<const tasks::LoglikelihoodRequest>, const tasks::CallOptions&) override;
  absl::StatusOr<std::vector<tasks::RollingResult>> LoglikelihoodRolling(
      absl::Span<const tasks::RollingRequest>, const tasks::CallOptions&) override;
  absl::StatusOr<std::vector<tasks::GenerateUntilResult>> GenerateUntil(
      absl::Span<const tasks::GenerateUntilRequest>, const tasks::CallOptions&) override;
  absl::StatusOr<std::vector<tasks::ClassifyResult>> Classify(
      absl::Span<const tasks::ClassifyRequest> requests,
      const tasks::CallOptions& options) override;

  tasks::LanguageModelInfo info() const override;
  tasks::LanguageModelStats stats() const override { return stats_; }
  void ResetStats() override { stats_ = {}; }

  int64_t cached() const { return cached_; }
  int64_t computed() const { return computed_; }

 private:
  LoadedModel* model_;
  Executor* executor_;
  std::function<bool()> cancelled_;
  int64_t chunk_examples_;
  tasks::LanguageModelStats stats_;
  std::atomic<int64_t> cached_{0};
  std::atomic<int64_t> computed_{0};
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_JOBS_STORE_LRA_CLASSIFIER_H_
