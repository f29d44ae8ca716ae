// The CUDA backend checks Forward batches with the CPU's rules (ValidateForwardItems):
// target ids below -1 are refused, want_all_logits returns the raw logits of every fed
// position (and is refused on an item feeding no token). Skipped without a GPU.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/family_params.h"
#include "tests/support/all_logits_check.h"

namespace hgeval {
namespace {

class ForwardValidationGpuTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU";
  }
};

TEST_P(ForwardValidationGpuTest, RefusesTargetsBelowMinusOneAndLeavesTheStateAlone) {
  auto model = testing::BuildGoldenCudaModel(GetParam(), "fp32");
  ASSERT_TRUE(model.ok()) << model.status();
  std::unique_ptr<SequenceState> state = (*model)->NewState();
  for (const std::vector<int32_t>& tokens : {std::vector<int32_t>{3}, {3, 4, 5}}) {
    std::vector<int32_t> targets(tokens.size(), 4);
    targets.back() = -2;
    ForwardItem item;
    item.tokens = tokens;
    item.targets = targets;
    item.state = state.get();
    ForwardOutput out;
    EXPECT_EQ((*model)->Forward({&item, 1}, {&out, 1}).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(state->position(), 0);
  }
}

TEST_P(ForwardValidationGpuTest, AllLogitsAreTheRawLogitsOfEveryPosition) {
  auto model = testing::BuildGoldenCudaModel(GetParam(), "fp32");
  ASSERT_TRUE(model.ok()) << model.status();
  // Four tokens (a pack) and one token continuing a state (the decode step's shape; an
  // item wanting all logits runs packed).
  testing::ExpectAllLogitsMatchScoring(**model, {3, 4, 5, 6}, {4, 5, 6, 7}, 1e-4);
  testing::ExpectAllLogitsMatchScoring(**model, {7}, {8}, 1e-4);
  std::unique_ptr<SequenceState> state = (*model)->NewState();
  ForwardItem empty;
  empty.state = state.get();
  empty.want_all_logits = true;
  ForwardOutput unused;
  EXPECT_EQ((*model)->Forward({&empty, 1}, {&unused, 1}).code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Families, ForwardValidationGpuTest, testing::GoldenFamilies(),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace hgeval
