// A CPU model whose weights and sequence states are charged to the host's memory budget
// (HostMemoryBudget, --host_memory): a state that would not fit is refused (NewState and
// Clone give null, Forward fails with RESOURCE_EXHAUSTED before it changes anything), so
// callers that size their rounds by StateBytes and the budget shrink instead of running
// the host out of memory. Every CPU model is built inside one (BuildModel).
#ifndef HGEVAL_ENGINE_CPU_HOST_BUDGETED_MODEL_H_
#define HGEVAL_ENGINE_CPU_HOST_BUDGETED_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "engine/model/model.h"
#include "engine/util/memory_budget.h"

namespace hgeval::cpu {

class HostBudgetedModel : public Model {
 public:
  // Charges the weights (fp32 parameters) to `budget`; RESOURCE_EXHAUSTED when they do not
  // fit. `budget` must outlive the model.
  static absl::StatusOr<std::unique_ptr<Model>> Wrap(std::unique_ptr<Model> model,
                                                     MemoryBudget* budget);
  ~HostBudgetedModel() override;

  const ModelInfo& info() const override { return model_->info(); }
  const ModelConfig& config() const override { return model_->config(); }
  std::unique_ptr<SequenceState> NewState() const override;
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override;
  size_t StateBytes(int64_t tokens) const override;
  MemoryBudget* memory_budget() const override { return budget_; }

 private:
  HostBudgetedModel(std::unique_ptr<Model> model, MemoryBudget* budget, size_t weight_bytes,
                    size_t empty_state_bytes);

  const std::unique_ptr<Model> model_;
  MemoryBudget* const budget_;
  const size_t weight_bytes_;
  const size_t empty_state_bytes_;
};

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_HOST_BUDGETED_MODEL_H_
