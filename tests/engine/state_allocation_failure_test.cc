// A backend out of memory for another sequence state (CUDA's NewState/Clone return null)
// surfaces as RESOURCE_EXHAUSTED from every runtime entry point instead of a crash.
#include <memory>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"

namespace hgeval {
namespace {

// A real model whose state allocations (NewState, and the states fresh-start items take
// inside Forward) fail after `budget` successful ones, as a full device does.
class StateBudgetModel : public Model {
 public:
  StateBudgetModel(std::unique_ptr<Model> model, int budget)
      : model_(std::move(model)), budget_(budget) {}
  const ModelInfo& info() const override { return model_->info(); }
  const ModelConfig& config() const override { return model_->config(); }
  std::unique_ptr<SequenceState> NewState() const override {
    if (budget_ <= 0) return nullptr;
    --budget_;
    return model_->NewState();
  }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    // A fresh start takes a state inside the call: refused, as the device would, when the
    // budget has none left for every fresh item of the call.
    int fresh = 0;
    for (const ForwardItem& item : items) fresh += item.fresh_start ? 1 : 0;
    if (fresh > budget_) {
      return absl::ResourceExhaustedError("out of memory for a fresh sequence state");
    }
    budget_ -= fresh;
    return model_->Forward(items, outputs);
  }

 private:
  std::unique_ptr<Model> model_;
  mutable int budget_;
};

// A state whose copy fails.
class UncopyableState : public SequenceState {
 public:
  int64_t position() const override { return 0; }
  std::unique_ptr<SequenceState> Clone() const override { return nullptr; }
  size_t bytes() const override { return 0; }
};

TEST(StateAllocationFailureTest, CloneStateAndStartStateReportResourceExhausted) {
  UncopyableState state;
  absl::StatusOr<std::unique_ptr<SequenceState>> copy = CloneState(state);
  ASSERT_FALSE(copy.ok());
  EXPECT_EQ(copy.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(copy.status().message().find("out of memory"), std::string::npos);

  StateBudgetModel model(testing::LoadTestModel("tests/golden/hgrn2"), 0);
  EXPECT_EQ(StartState(model, nullptr).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(StartState(model, &state).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(StateAllocationFailureTest, RuntimeEntryPointsFailCleanly) {
  StateBudgetModel model(testing::LoadTestModel("tests/golden/hgrn2"), 1);
  ScoreRequest request;
  request.context = {1, 2, 3};
  request.continuation = {4, 5};
  // The first request gets the one state the budget allows, the second does not.
  absl::StatusOr<std::vector<ScoreResult>> scored = Score(model, {request, request});
  ASSERT_FALSE(scored.ok());
  EXPECT_EQ(scored.status().code(), absl::StatusCode::kResourceExhausted);

  StateBudgetModel empty(testing::LoadTestModel("tests/golden/hgrn2"), 0);
  const std::vector<int32_t> tokens = {1, 2, 3, 4};
  EXPECT_EQ(Prefill(empty, tokens).status().code(), absl::StatusCode::kResourceExhausted);
  const std::vector<int64_t> positions = {1, 3};
  EXPECT_EQ(PrefillWithSnapshots(empty, tokens, positions).status().code(),
            absl::StatusCode::kResourceExhausted);
  DecodeBatch batch(&empty, nullptr);
  GenerateRequest generate;
  generate.prompt = tokens;
  generate.max_new_tokens = 2;
  EXPECT_EQ(batch.Add(generate).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(batch.empty());
}

}  // namespace
}  // namespace hgeval
