// ForwardItem::want_last_argmax on the CUDA backend, on the sequence path (prompts) and the
// decode-graph path (one token per sequence): the greedy token read from the device equals
// the argmax of the full last log-probability row, and greedy generation (which now asks
// only for the argmax) produces the tokens the full rows give.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/generation.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/family_params.h"

namespace hgeval {
namespace {

int32_t ArgmaxOf(const std::vector<float>& row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

class CudaLastArgmaxTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaLastArgmaxTest, ArgmaxEqualsTheFullRowOnBothPaths) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  absl::StatusOr<std::unique_ptr<Model>> model = testing::BuildGoldenCudaModel(GetParam(), "fp32");
  ASSERT_TRUE(model.ok()) << model.status();
  Model& m = **model;
  const int64_t vocab = m.info().vocab_size;
  constexpr int kRows = 3;
  std::vector<std::unique_ptr<SequenceState>> argmax_states, row_states;
  std::vector<std::vector<int32_t>> feed(kRows);
  for (int r = 0; r < kRows; ++r) {
    argmax_states.push_back(m.NewState());
    row_states.push_back(m.NewState());
    for (int i = 0; i < 9 + 4 * r; ++i) feed[r].push_back((i * 97 + 31 * r + 5) % (vocab - 3) + 3);
  }
  for (int step = 0; step < 4; ++step) {  // step 0: prompts (sequence path), then decode
    std::vector<ForwardItem> items(2 * kRows);
    for (int r = 0; r < kRows; ++r) {
      items[r].tokens = feed[r];
      items[r].state = argmax_states[r].get();
      items[r].want_last_argmax = true;
      items[kRows + r].tokens = feed[r];
      items[kRows + r].state = row_states[r].get();
      items[kRows + r].want_last_logprobs = true;
    }
    std::vector<ForwardOutput> out(items.size());
    ASSERT_TRUE(m.Forward(items, absl::MakeSpan(out)).ok());
    for (int r = 0; r < kRows; ++r) {
      ASSERT_EQ(out[kRows + r].last_logprobs.size(), static_cast<size_t>(vocab));
      EXPECT_TRUE(out[r].last_logprobs.empty());
      const int32_t expected = ArgmaxOf(out[kRows + r].last_logprobs);
      EXPECT_EQ(out[r].last_argmax, expected) << GetParam() << " step " << step << " row " << r;
      feed[r] = {expected};
    }
  }
}

TEST_P(CudaLastArgmaxTest, GreedyGenerationMatchesFullRowDecoding) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  absl::StatusOr<std::unique_ptr<Model>> model = testing::BuildGoldenCudaModel(GetParam(), "fp32");
  ASSERT_TRUE(model.ok()) << model.status();
  Model& m = **model;
  std::vector<GenerateRequest> requests(2);
  requests[0].prompt = {1, 5, 9, 13, 17};
  requests[1].prompt = {2, 40, 7};
  for (GenerateRequest& r : requests) r.max_new_tokens = 10;
  absl::StatusOr<std::vector<GenerateResult>> generated = Generate(m, nullptr, requests);
  ASSERT_TRUE(generated.ok()) << generated.status();
  for (size_t i = 0; i < requests.size(); ++i) {
    std::unique_ptr<SequenceState> state = m.NewState();
    std::vector<int32_t> feed = requests[i].prompt, tokens;
    for (int n = 0; n < requests[i].max_new_tokens; ++n) {
      ForwardItem item;
      item.tokens = feed;
      item.state = state.get();
      item.want_last_logprobs = true;
      std::vector<ForwardOutput> out(1);
      ASSERT_TRUE(m.Forward({&item, 1}, absl::MakeSpan(out)).ok());
      tokens.push_back(ArgmaxOf(out[0].last_logprobs));
      feed = {tokens.back()};
    }
    EXPECT_EQ((*generated)[i].tokens, tokens) << GetParam() << " request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, CudaLastArgmaxTest, testing::GoldenFamilies());

}  // namespace
}  // namespace hgeval
