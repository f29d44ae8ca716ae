// ValidateForwardItems (engine/model/forward_validation.h), the one check every backend
// runs before Forward changes anything, and the cases where the CUDA backend used to
// differ from the CPU one (target ids below -1, want_all_logits), on the CPU models.
#include "engine/model/forward_validation.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"
#include "tests/support/all_logits_check.h"

namespace hgeval {
namespace {

class FakeState final : public SequenceState {
 public:
  explicit FakeState(int64_t position) : position_(position) {}
  int64_t position() const override { return position_; }
  std::unique_ptr<SequenceState> Clone() const override {
    return std::make_unique<FakeState>(position_);
  }
  size_t bytes() const override { return 0; }

 private:
  int64_t position_;
};

absl::Status Check(const ForwardItem& item, int64_t max_context = 0) {
  return ValidateForwardItems({&item, 1}, 1, /*vocab=*/10, max_context);
}

TEST(ValidateForwardItemsTest, AcceptsAWellFormedItem) {
  FakeState state(0);
  const std::vector<int32_t> tokens = {0, 9, 3}, targets = {-1, 9, 0};
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.state = &state;
  item.top_k = 3;
  item.want_all_logits = true;
  EXPECT_TRUE(Check(item).ok());
}

TEST(ValidateForwardItemsTest, RefusesTargetsBelowMinusOne) {
  FakeState state(0);
  const std::vector<int32_t> tokens = {1, 2}, targets = {-1, -2};
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.state = &state;
  const absl::Status status = Check(item);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("target id -2"), std::string::npos) << status;
}

TEST(ValidateForwardItemsTest, RefusesAllLogitsOfAnItemFeedingNoToken) {
  FakeState state(0);
  ForwardItem item;
  item.state = &state;
  item.want_all_logits = true;
  EXPECT_EQ(Check(item).code(), absl::StatusCode::kInvalidArgument);
  item.want_all_logits = false;
  EXPECT_TRUE(Check(item).ok());  // nothing asked, nothing fed: fine
}

TEST(ValidateForwardItemsTest, RefusesEachMalformedField) {
  FakeState state(0);
  const std::vector<int32_t> tokens = {1, 2}, short_targets = {1}, bad_tokens = {1, 10};
  ForwardItem item;
  item.tokens = tokens;
  EXPECT_EQ(Check(item).code(), absl::StatusCode::kInvalidArgument);  // no state, no start
  item.state = &state;
  item.start = &state;
  EXPECT_EQ(Check(item).code(), absl::StatusCode::kInvalidArgument);  // both
  item.start = nullptr;
  item.targets = short_targets;
  EXPECT_EQ(Check(item).code(), absl::StatusCode::kInvalidArgument);
  item.targets = {};
  item.tokens = bad_tokens;
  EXPECT_EQ(Check(item).code(), absl::StatusCode::kInvalidArgument);
  item.tokens = tokens;
  item.top_k = -1;
  EXPECT_EQ(Check(item).code(), absl::StatusCode::kInvalidArgument);
  item.top_k = 0;
  EXPECT_EQ(ValidateForwardItems({&item, 1}, 2, 10).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateForwardItemsTest, BoundsPositionsByMaxContextFromStateOrStart) {
  FakeState state(6);
  const std::vector<int32_t> tokens = {1, 2};
  ForwardItem item;
  item.tokens = tokens;
  item.state = &state;
  EXPECT_TRUE(Check(item, 8).ok());
  EXPECT_EQ(Check(item, 7).code(), absl::StatusCode::kInvalidArgument);
  item.state = nullptr;
  item.start = &state;
  EXPECT_NE(Check(item, 7).message().find("maximum context of 7"), std::string::npos);
  EXPECT_TRUE(Check(item, 0).ok());  // 0: unbounded
}

// The CPU backend's semantics, which the CUDA backend now shares (forward_validation
// _gpu_test checks the same on a GPU).
class CpuForwardValidationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuForwardValidationTest, RefusesTargetsBelowMinusOneAndLeavesTheStateAlone) {
  std::unique_ptr<Model> model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  std::unique_ptr<SequenceState> state = model->NewState();
  const std::vector<int32_t> tokens = {3, 4, 5}, targets = {4, -2, 6};
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.state = state.get();
  ForwardOutput out;
  EXPECT_EQ(model->Forward({&item, 1}, {&out, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state->position(), 0);
}

TEST_P(CpuForwardValidationTest, AllLogitsAreTheRawLogitsOfEveryPosition) {
  std::unique_ptr<Model> model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  testing::ExpectAllLogitsMatchScoring(*model, {3, 4, 5, 6}, {4, 5, 6, 7}, 1e-4);
  std::unique_ptr<SequenceState> fresh = model->NewState();
  ForwardItem empty;
  empty.state = fresh.get();
  empty.want_all_logits = true;
  ForwardOutput unused;
  EXPECT_EQ(model->Forward({&empty, 1}, {&unused, 1}).code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Models, CpuForwardValidationTest,
                         ::testing::Values("tests/golden/hgrn2", "tests/golden/llama",
                                           "tests/golden/tnl"),
                         testing::ModelTestName);

}  // namespace
}  // namespace hgeval
