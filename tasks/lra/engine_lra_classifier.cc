#include "tasks/lra/engine_lra_classifier.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/lra_input.h"

namespace hgeval::tasks::lra {
namespace {

absl::Status NotAClassifierCall(const char* kind) {
  return absl::UnimplementedError(absl::StrCat(
      "an LRA classifier answers classify requests only, not ", kind, " (tasks lra_*)"));
}

}  // namespace

absl::StatusOr<std::optional<LraVocabulary>> LoadLraVocabularyBeside(
    const std::string& dir, const LraClassifierConfig& config) {
  const std::string path = dir + "/lra_vocab.json";
  if (!std::filesystem::exists(path)) {
    if (config.embedding_encoder) {
      return absl::FailedPreconditionError(absl::StrCat(
          dir, ": a token-input LRA classifier needs its vocabulary file lra_vocab.json"));
    }
    return std::optional<LraVocabulary>();
  }
  absl::StatusOr<LraVocabulary> vocab = LraVocabulary::Load(path);
  if (!vocab.ok()) return vocab.status();
  if (config.embedding_encoder && vocab->size() > config.vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": ", vocab->size(), " ids, more than the model's vocab_size ", config.vocab_size));
  }
  return std::optional<LraVocabulary>(*std::move(vocab));
}

absl::StatusOr<std::vector<ClassifyResult>> ClassifyWithEngine(
    const LraClassifier& model, const LraVocabulary* vocab,
    absl::Span<const ClassifyRequest> requests, const CallOptions& options, int64_t* positions) {
  std::vector<ClassifyResult> results(requests.size());
  for (size_t begin = 0; begin < requests.size(); begin += kLraExamplesPerCall) {
    if (options.cancelled && options.cancelled()) {
      return absl::CancelledError("classification cancelled");
    }
    const size_t end = std::min(requests.size(), begin + kLraExamplesPerCall);
    std::vector<LraInput> inputs(end - begin);
    for (size_t i = begin; i < end; ++i) {
      for (const ClassifyDocument& d : requests[i].documents) {
        absl::StatusOr<LraDocument> doc =
            MakeLraDocument(model.config(), vocab, d.text, d.pixels, d.channels);
        if (!doc.ok()) {
          return absl::Status(doc.status().code(),
                              absl::StrCat("request ", i, ": ", doc.status().message()));
        }
        if (positions != nullptr) {
          *positions += static_cast<int64_t>(doc->tokens.size() + doc->pixels.size());
        }
        inputs[i - begin].documents.push_back(*std::move(doc));
      }
    }
    std::vector<std::vector<float>> logits;
    if (absl::Status s = model.Classify(inputs, &logits); !s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("requests ", begin, "..", end - 1, ": ", s.message()));
    }
    for (size_t i = begin; i < end; ++i) {
      results[i].predicted = PredictedClass(logits[i - begin]);
      results[i].logits = std::move(logits[i - begin]);
    }
    if (options.progress) options.progress(static_cast<int64_t>(end), requests.size());
  }
  return results;
}

absl::StatusOr<std::unique_ptr<EngineLraClassifier>> EngineLraClassifier::Load(
    const std::string& dir, const LoadOptions& options) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = OpenCheckpoint(dir);
  if (!checkpoint.ok()) return checkpoint.status();
  absl::StatusOr<std::unique_ptr<LraClassifier>> model = BuildLraClassifier(**checkpoint, options);
  if (!model.ok()) return model.status();
  auto lm = std::unique_ptr<EngineLraClassifier>(new EngineLraClassifier());
  absl::StatusOr<std::optional<LraVocabulary>> vocab =
      LoadLraVocabularyBeside(dir, (*model)->config());
  if (!vocab.ok()) return vocab.status();
  lm->vocab_ = *std::move(vocab);
  lm->info_.model = dir;
  lm->info_.model_hash = (*checkpoint)->ContentHash();
  lm->info_.family = LraFamilyName((*model)->config());
  lm->info_.tokenizer = lm->vocab_.has_value() ? dir + "/lra_vocab.json" : "";
  lm->info_.dtype = "fp32";
  lm->info_.backend = (*model)->backend();
  lm->model_ = *std::move(model);
  return lm;
}

absl::StatusOr<std::vector<LoglikelihoodResult>> EngineLraClassifier::Loglikelihood(
    absl::Span<const LoglikelihoodRequest>, const CallOptions&) {
  return NotAClassifierCall("loglikelihood");
}
absl::StatusOr<std::vector<RollingResult>> EngineLraClassifier::LoglikelihoodRolling(
    absl::Span<const RollingRequest>, const CallOptions&) {
  return NotAClassifierCall("loglikelihood_rolling");
}
absl::StatusOr<std::vector<GenerateUntilResult>> EngineLraClassifier::GenerateUntil(
    absl::Span<const GenerateUntilRequest>, const CallOptions&) {
  return NotAClassifierCall("generate_until");
}

absl::StatusOr<std::vector<ClassifyResult>> EngineLraClassifier::Classify(
    absl::Span<const ClassifyRequest> requests, const CallOptions& options) {
  stats_.requests += static_cast<int64_t>(requests.size());
  return ClassifyWithEngine(*model_, vocab_.has_value() ? &*vocab_ : nullptr, requests, options,
                            &stats_.tokens_fed);
}

}  // namespace hgeval::tasks::lra
