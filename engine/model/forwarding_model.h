// A Model that passes every call to another one. The wrappers around a model (a thread
// limit, a lock, a timer) derive from it and override only the calls they change, so a
// call added to Model is forwarded by all of them at once.
#ifndef HGEVAL_ENGINE_MODEL_FORWARDING_MODEL_H_
#define HGEVAL_ENGINE_MODEL_FORWARDING_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/model/model.h"

namespace hgeval {

class ForwardingModel : public Model {
 public:
  const ModelInfo& info() const override { return inner_->info(); }
  const ModelConfig& config() const override { return inner_->config(); }
  std::unique_ptr<SequenceState> NewState() const override { return inner_->NewState(); }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    return inner_->Forward(items, outputs);
  }
  std::unique_ptr<SequenceState> NewStateFor(const SequenceState* start,
                                             int64_t tokens) const override {
    return inner_->NewStateFor(start, tokens);
  }
  size_t StateBytes(int64_t tokens) const override { return inner_->StateBytes(tokens); }
  size_t ReadOnlyForkBytes(int64_t start_tokens, int64_t tokens) const override {
    return inner_->ReadOnlyForkBytes(start_tokens, tokens);
  }
  MemoryBudget* memory_budget() const override { return inner_->memory_budget(); }

 protected:
  // Owns `inner`.
  explicit ForwardingModel(std::unique_ptr<Model> inner)
      : owned_(std::move(inner)), inner_(owned_.get()) {}
  // `inner` outlives this model.
  explicit ForwardingModel(Model* inner) : inner_(inner) {}

  Model& inner() const { return *inner_; }

 private:
  const std::unique_ptr<Model> owned_;
  Model* const inner_;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_FORWARDING_MODEL_H_
