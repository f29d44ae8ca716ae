// A CPU model whose Forward calls use at most a given number of threads
// (LoadOptions::threads, the server's --threads): the worker pool is shared by every model
// of the process, so the limit is applied per call rather than per pool.
#ifndef HGEVAL_ENGINE_CPU_THREAD_LIMITED_MODEL_H_
#define HGEVAL_ENGINE_CPU_THREAD_LIMITED_MODEL_H_

#include <memory>
#include <utility>

#include "engine/cpu/ops.h"
#include "engine/model/forwarding_model.h"

namespace hgeval::cpu {

class ThreadLimitedModel : public ForwardingModel {
 public:
  ThreadLimitedModel(std::unique_ptr<Model> model, int threads)
      : ForwardingModel(std::move(model)), threads_(threads) {}

  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    ScopedCpuThreads limit(threads_);
    return inner().Forward(items, outputs);
  }

 private:
  const int threads_;
};

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_THREAD_LIMITED_MODEL_H_
