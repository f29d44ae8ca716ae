// A Model that serialises every call on the model it owns. The server drives one model
// from its scheduler thread and from job threads (NIAH sweeps feed the model directly to
// reuse the haystack prefix); Model::Forward is not re-entrant, so both go through this
// wrapper and take turns call by call.
#ifndef HGEVAL_SERVER_EXEC_SERIALIZED_MODEL_H_
#define HGEVAL_SERVER_EXEC_SERIALIZED_MODEL_H_

#include <memory>

#include "absl/synchronization/mutex.h"
#include "engine/model/model.h"

namespace hgeval::server {

class SerializedModel : public Model {
 public:
  explicit SerializedModel(std::unique_ptr<Model> model) : model_(std::move(model)) {}

  const ModelInfo& info() const override { return model_->info(); }
  const ModelConfig& config() const override { return model_->config(); }
  std::unique_ptr<SequenceState> NewState() const override {
    absl::MutexLock lock(&mu_);
    return model_->NewState();
  }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    absl::MutexLock lock(&mu_);
    return model_->Forward(items, outputs);
  }

  std::unique_ptr<SequenceState> NewStateFor(const SequenceState* start,
                                             int64_t tokens) const override {
    absl::MutexLock lock(&mu_);
    return model_->NewStateFor(start, tokens);
  }
  size_t StateBytes(int64_t tokens) const override { return model_->StateBytes(tokens); }
  size_t ReadOnlyForkBytes(int64_t start_tokens, int64_t tokens) const override {
    return model_->ReadOnlyForkBytes(start_tokens, tokens);
  }
  MemoryBudget* memory_budget() const override { return model_->memory_budget(); }

 private:
  const std::unique_ptr<Model> model_;
  mutable absl::Mutex mu_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_EXEC_SERIALIZED_MODEL_H_
