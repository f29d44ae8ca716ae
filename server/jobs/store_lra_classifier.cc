#include "server/jobs/store_lra_classifier.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/model/lra_input.h"

namespace hgeval::server {
namespace {

absl::Status NotALanguageModel(const LoadedModel& model, const char* kind) {
  return absl::UnimplementedError(absl::StrCat("model '", model.spec.name,
                                               "' is an LRA classifier: it answers classify "
                                               "requests (tasks lra_*), not ",
                                               kind));
}

}  // namespace

StoreLraClassifier::StoreLraClassifier(LoadedModel* model, Executor* executor,
                                       std::function<bool()> cancelled, int64_t chunk_examples)
    : model_(model),
      executor_(executor),
      cancelled_(std::move(cancelled)),
      chunk_examples_(std::max<int64_t>(1, chunk_examples)) {}

absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> StoreLraClassifier::Loglikelihood(
    absl::Span<const tasks::LoglikelihoodRequest>, const tasks::CallOptions&) {
  return NotALanguageModel(*model_, "loglikelihood");
}
absl::StatusOr<std::vector<tasks::RollingResult>> StoreLraClassifier::LoglikelihoodRolling(
    absl::Span<const tasks::RollingRequest>, const tasks::CallOptions&) {
  return NotALanguageModel(*model_, "loglikelihood_rolling");
}
absl::StatusOr<std::vector<tasks::GenerateUntilResult>> StoreLraClassifier::GenerateUntil(
    absl::Span<const tasks::GenerateUntilRequest>, const tasks::CallOptions&) {
  return NotALanguageModel(*model_, "generate_until");
}

absl::StatusOr<std::vector<tasks::ClassifyResult>> StoreLraClassifier::Classify(
    absl::Span<const tasks::ClassifyRequest> requests, const tasks::CallOptions& options) {
  const LraVocabulary* vocab = model_->lra_vocab.has_value() ? &*model_->lra_vocab : nullptr;
  CallControl control;
  control.cancelled = [this, &options] {
    return (cancelled_ && cancelled_()) || (options.cancelled && options.cancelled());
  };
  std::vector<tasks::ClassifyResult> out(requests.size());
  for (size_t begin = 0; begin < requests.size(); begin += chunk_examples_) {
    const size_t end = std::min<size_t>(requests.size(), begin + chunk_examples_);
    std::vector<LraInput> inputs(end - begin);
    for (size_t i = begin; i < end; ++i) {
      for (const tasks::ClassifyDocument& d : requests[i].documents) {
        absl::StatusOr<LraDocument> doc =
            MakeLraDocument(model_->classifier->config(), vocab, d.text, d.pixels, d.channels);
        if (!doc.ok()) {
          return absl::Status(doc.status().code(),
                              absl::StrCat("request ", i, ": ", doc.status().message()));
        }
        inputs[i - begin].documents.push_back(*std::move(doc));
      }
    }
    int64_t cached = 0;
    absl::StatusOr<std::vector<Classification>> results =
        executor_->Classify(*model_, inputs, /*use_store=*/true, control, &cached);
    if (!results.ok()) return results.status();
    cached_ += cached;
    computed_ += static_cast<int64_t>(inputs.size()) - cached;
    for (size_t i = begin; i < end; ++i) {
      Classification& r = (*results)[i - begin];
      out[i].logits = std::move(r.logits);
      out[i].predicted = r.predicted;
    }
    stats_.requests += static_cast<int64_t>(end - begin);
    if (options.progress) options.progress(static_cast<int64_t>(end), requests.size());
  }
  return out;
}

tasks::LanguageModelInfo StoreLraClassifier::info() const {
  tasks::LanguageModelInfo info;
  info.model = model_->spec.name;
  info.model_hash = model_->model_hash;
  info.family = model_->family;
  info.tokenizer = model_->lra_vocab.has_value() ? "lra_vocab.json" : "";
  info.tokenizer_hash = model_->tokenizer_hash;
  info.dtype = model_->info.dtype;
  info.backend = model_->info.backend;
  return info;
}

}  // namespace hgeval::server
