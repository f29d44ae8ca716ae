#include "engine/cpu/host_budgeted_model.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"

namespace hgeval::cpu {
namespace {

// The inner model's state with the bytes charged for it; the charge is given back with
// the state.
class BudgetedState final : public SequenceState {
 public:
  BudgetedState(const HostBudgetedModel* owner, std::unique_ptr<SequenceState> inner,
                MemoryBudget* budget, size_t charged)
      : owner_(owner), inner_(std::move(inner)), budget_(budget), charged_(charged) {}
  ~BudgetedState() override { budget_->Release(charged_); }

  int64_t position() const override { return inner_->position(); }
  std::unique_ptr<SequenceState> Clone() const override {
    if (!budget_->Reserve(charged_, "copying a sequence state").ok()) return nullptr;
    std::unique_ptr<SequenceState> copy = inner_->Clone();
    if (copy == nullptr) {
      budget_->Release(charged_);
      return nullptr;
    }
    return std::make_unique<BudgetedState>(owner_, std::move(copy), budget_, charged_);
  }
  size_t bytes() const override { return inner_->bytes(); }

  const HostBudgetedModel* owner() const { return owner_; }
  SequenceState* inner() const { return inner_.get(); }
  size_t charged() const { return charged_; }
  void AddCharge(size_t bytes) { charged_ += bytes; }

 private:
  const HostBudgetedModel* owner_;
  std::unique_ptr<SequenceState> inner_;
  MemoryBudget* budget_;
  size_t charged_;
};

const BudgetedState* AsBudgeted(const SequenceState* state, const HostBudgetedModel* owner) {
  const auto* budgeted = dynamic_cast<const BudgetedState*>(state);
  return budgeted != nullptr && budgeted->owner() == owner ? budgeted : nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> HostBudgetedModel::Wrap(std::unique_ptr<Model> model,
                                                               MemoryBudget* budget) {
  const size_t weights = static_cast<size_t>(model->info().num_parameters) * sizeof(float);
  HG_RETURN_IF_ERROR(budget->Reserve(weights, "the model's weights"));
  std::unique_ptr<SequenceState> empty = model->NewState();
  const size_t empty_bytes = empty == nullptr ? 0 : empty->bytes();
  empty.reset();
  return std::unique_ptr<Model>(
      new HostBudgetedModel(std::move(model), budget, weights, empty_bytes));
}

HostBudgetedModel::HostBudgetedModel(std::unique_ptr<Model> model, MemoryBudget* budget,
                                     size_t weight_bytes, size_t empty_state_bytes)
    : model_(std::move(model)),
      budget_(budget),
      weight_bytes_(weight_bytes),
      empty_state_bytes_(empty_state_bytes) {}

HostBudgetedModel::~HostBudgetedModel() { budget_->Release(weight_bytes_); }

size_t HostBudgetedModel::StateBytes(int64_t tokens) const {
  return empty_state_bytes_ + static_cast<size_t>(info().state_bytes_per_token * tokens);
}

std::unique_ptr<SequenceState> HostBudgetedModel::NewState() const {
  const size_t bytes = StateBytes(0);
  if (!budget_->Reserve(bytes, "a sequence state").ok()) return nullptr;
  std::unique_ptr<SequenceState> inner = model_->NewState();
  if (inner == nullptr) {
    budget_->Release(bytes);
    return nullptr;
  }
  return std::make_unique<BudgetedState>(this, std::move(inner), budget_, bytes);
}

absl::Status HostBudgetedModel::Forward(absl::Span<const ForwardItem> items,
                                        absl::Span<ForwardOutput> outputs) {
  // What the call needs before it runs: each kept state grows by its tokens, each
  // read-only or fresh start gets a state of its own for the call (the CPU families
  // advance a private copy).
  std::vector<ForwardItem> inner(items.begin(), items.end());
  std::vector<size_t> growth(items.size(), 0);
  size_t transient = 0, total_growth = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const SequenceState* given = items[i].state != nullptr ? items[i].state : items[i].start;
    if (given == nullptr) {
      // A fresh start runs on a state of its own for the call; anything else is the
      // model's validation to name.
      if (items[i].fresh_start) {
        transient += StateBytes(static_cast<int64_t>(items[i].tokens.size()));
      }
      continue;
    }
    const BudgetedState* state = AsBudgeted(given, this);
    if (state == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("item ", i, ": the sequence state was not created by this model"));
    }
    const int64_t end = state->position() + static_cast<int64_t>(items[i].tokens.size());
    if (items[i].state != nullptr) {
      const size_t need = StateBytes(end);
      growth[i] = need > state->charged() ? need - state->charged() : 0;
      total_growth += growth[i];
      inner[i].state = state->inner();
    } else {
      transient += StateBytes(end);
      inner[i].start = state->inner();
    }
  }
  HG_RETURN_IF_ERROR(budget_->Reserve(total_growth + transient, "a forward pass's states"));
  absl::Status status = model_->Forward(inner, outputs);
  budget_->Release(transient);
  if (!status.ok()) {
    budget_->Release(total_growth);
    return status;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].state == nullptr) continue;
    static_cast<BudgetedState*>(items[i].state)->AddCharge(growth[i]);
  }
  return absl::OkStatus();
}

}  // namespace hgeval::cpu
