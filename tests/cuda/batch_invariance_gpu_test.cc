// Batch invariance on the GPU: an item's results are bitwise the same whether it runs
// alone or packed with 7 other items of various lengths, for prefill/scoring and for
// one-token decode steps.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"

namespace hgeval::testing {
namespace {

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

class CudaBatchInvarianceTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(CudaBatchInvarianceTest, AloneEqualsPacked) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [family, dtype] = GetParam();
  auto model = BuildGoldenCudaModel(family, dtype);
  ASSERT_TRUE(model.ok()) << model.status();
  Model& m = **model;
  const int vocab = static_cast<int>(m.info().vocab_size);
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> dist(0, vocab - 1);
  const std::vector<int> lengths = {1, 5, 64, 65, 130, 1, 17, 300};
  const int n = static_cast<int>(lengths.size());
  std::vector<std::vector<int32_t>> tokens(n), targets(n);
  for (int i = 0; i < n; ++i) {
    for (int t = 0; t < lengths[i]; ++t) {
      tokens[i].push_back(dist(rng));
      targets[i].push_back(t % 3 == 2 ? -1 : dist(rng));
    }
  }
  std::vector<int32_t> step_tokens(n), step_targets(n);
  for (int i = 0; i < n; ++i) {
    step_tokens[i] = dist(rng);
    step_targets[i] = dist(rng);
  }

  // Alone.
  std::vector<ForwardOutput> alone(n), alone_step(n);
  for (int i = 0; i < n; ++i) {
    auto st = m.NewState();
    auto out = RunOne(m, st.get(), tokens[i], targets[i], /*want_last=*/true);
    ASSERT_TRUE(out.ok()) << out.status();
    alone[i] = std::move(*out);
    auto step = RunOne(m, st.get(), {step_tokens[i]}, {step_targets[i]}, true);
    ASSERT_TRUE(step.ok()) << step.status();
    alone_step[i] = std::move(*step);
  }

  // Packed: all 8 in one Forward, then one decode step for all 8.
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<ForwardItem> items(n);
  for (int i = 0; i < n; ++i) {
    states.push_back(m.NewState());
    items[i].tokens = tokens[i];
    items[i].targets = targets[i];
    items[i].state = states[i].get();
    items[i].want_last_logprobs = true;
  }
  std::vector<ForwardOutput> packed(n);
  ASSERT_TRUE(m.Forward(items, absl::MakeSpan(packed)).ok());
  std::vector<ForwardItem> steps(n);
  for (int i = 0; i < n; ++i) {
    steps[i].tokens = absl::MakeConstSpan(&step_tokens[i], 1);
    steps[i].targets = absl::MakeConstSpan(&step_targets[i], 1);
    steps[i].state = states[i].get();
    steps[i].want_last_logprobs = true;
  }
  std::vector<ForwardOutput> packed_step(n);
  ASSERT_TRUE(m.Forward(steps, absl::MakeSpan(packed_step)).ok());

  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(SameBits(alone[i].logprob, packed[i].logprob)) << "item " << i;
    EXPECT_EQ(alone[i].argmax, packed[i].argmax) << "item " << i;
    EXPECT_TRUE(SameBits(alone[i].last_logprobs, packed[i].last_logprobs)) << "item " << i;
    EXPECT_TRUE(SameBits(alone_step[i].logprob, packed_step[i].logprob)) << "item " << i;
    EXPECT_TRUE(SameBits(alone_step[i].last_logprobs, packed_step[i].last_logprobs))
        << "item " << i;
    EXPECT_EQ(states[i]->position(), lengths[i] + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllFamilies, CudaBatchInvarianceTest,
    ::testing::Combine(::testing::Values("hgrn2", "hgrn", "gla", "llama", "mamba"),
                       ::testing::Values("fp32", "bf16")),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

}  // namespace
}  // namespace hgeval::testing
