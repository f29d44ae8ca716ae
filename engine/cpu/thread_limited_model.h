// A CPU model whose Forward calls use at most a given number of threads
// (LoadOptions::threads, the server's --threads): the worker pool is shared by every model
// of the process, so the limit is applied per call rather than per pool.
#ifndef HGEVAL_ENGINE_CPU_THREAD_LIMITED_MODEL_H_
#define HGEVAL_ENGINE_CPU_THREAD_LIMITED_MODEL_H_

#include <memory>

#include "engine/cpu/ops.h"
#include "engine/model/model.h"

namespace hgeval::cpu {

class ThreadLimitedModel : public Model {
 public:
  ThreadLimitedModel(std::unique_ptr<Model> model, int threads)
      : model_(std::move(model)), threads_(threads) {}

  const ModelInfo& info() const override { return model_->info(); }
  const ModelConfig& config() const override { return model_->config(); }
  std::unique_ptr<SequenceState> NewState() const override { return model_->NewState(); }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    ScopedCpuThreads limit(threads_);
    return model_->Forward(items, outputs);
  }

  std::unique_ptr<SequenceState> NewStateFor(const SequenceState* start,
                                             int64_t tokens) const override {
    return model_->NewStateFor(start, tokens);
  }
  size_t StateBytes(int64_t tokens) const override { return model_->StateBytes(tokens); }
  size_t ReadOnlyForkBytes(int64_t start_tokens, int64_t tokens) const override {
    return model_->ReadOnlyForkBytes(start_tokens, tokens);
  }
  MemoryBudget* memory_budget() const override { return model_->memory_budget(); }

 private:
  const std::unique_ptr<Model> model_;
  const int threads_;
};

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_THREAD_LIMITED_MODEL_H_
