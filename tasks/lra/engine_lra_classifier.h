// An LRA classifier checkpoint in process, as a LanguageModel that answers `classify`
// requests (hgeval-eval --tasks lra_*). Text is encoded with the checkpoint's
// lra_vocab.json; images are passed as pixels (RGB made gray when the model takes one
// channel).
#ifndef HGEVAL_TASKS_LRA_ENGINE_LRA_CLASSIFIER_H_
#define HGEVAL_TASKS_LRA_ENGINE_LRA_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/lra_classifier.h"
#include "engine/tokenizer/lra_vocabulary.h"
#include "tasks/api/language_model.h"

namespace hgeval::tasks::lra {

// Examples per LraClassifier::Classify call (progress and cancellation between calls).
inline constexpr int64_t kLraExamplesPerCall = 16;

// Converts each request (MakeLraDocument) and classifies it; errors name the request.
// `positions`, when given, is increased by the positions (tokens or pixels) run.
absl::StatusOr<std::vector<ClassifyResult>> ClassifyWithEngine(
    const LraClassifier& model, const LraVocabulary* vocab,
    absl::Span<const ClassifyRequest> requests, const CallOptions& options,
    int64_t* positions = nullptr);

class EngineLraClassifier : public LanguageModel {
 public:
  // Loads `dir` (config.json, model.safetensors, and lra_vocab.json for text models) on
  // options.device (cpu, cuda, cuda:N; fp32 only).
  static absl::StatusOr<std::unique_ptr<EngineLraClassifier>> Load(const std::string& dir,
                                                                   const LoadOptions& options = {});

  absl::StatusOr<std::vector<LoglikelihoodResult>> Loglikelihood(
      absl::Span<const LoglikelihoodRequest>, const CallOptions&) override;
  absl::StatusOr<std::vector<RollingResult>> LoglikelihoodRolling(absl::Span<const RollingRequest>,
                                                                  const CallOptions&) override;
  absl::StatusOr<std::vector<GenerateUntilResult>> GenerateUntil(
      absl::Span<const GenerateUntilRequest>, const CallOptions&) override;
  absl::StatusOr<std::vector<ClassifyResult>> Classify(absl::Span<const ClassifyRequest> requests,
                                                       const CallOptions& options) override;
  LanguageModelInfo info() const override { return info_; }
  LanguageModelStats stats() const override { return stats_; }
  void ResetStats() override { stats_ = {}; }

 private:
  std::unique_ptr<LraClassifier> model_;
  std::optional<LraVocabulary> vocab_;
  LanguageModelInfo info_;
  LanguageModelStats stats_;
};

// Loads the vocabulary beside an LRA checkpoint: lra_vocab.json when present (required
// for token models), else nothing.
absl::StatusOr<std::optional<LraVocabulary>> LoadLraVocabularyBeside(
    const std::string& dir, const LraClassifierConfig& config);

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_ENGINE_LRA_CLASSIFIER_H_
