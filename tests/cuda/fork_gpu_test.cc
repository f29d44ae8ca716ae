// State snapshot/fork on the GPU: scoring a continuation after a forked state equals
// scoring context+continuation from scratch, for every family and context lengths around
// the chunk size; forks are independent of each other and of their source.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/family_params.h"

namespace hgeval::testing {
namespace {

class CudaForkTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(CudaForkTest, ForkedContinuationMatchesScratch) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [family, dtype] = GetParam();
  // fp32: both orders of evaluation are plain fp32 (only chunk boundaries and GEMM
  // shapes move), so they agree to fp32 rounding.
  // bf16: the two orders run GEMMs of different shapes, whose fp32 sums round to bf16
  // activations differently (one bf16 step is 2^-8 relative); the difference is then of
  // the order of the bf16 error itself (up to ~0.01 seen on LLaMA), far below what a wrong
  // state gives (order 1). Bound: 0.05.
  const double bound = dtype == "fp32" ? 1e-4 : 5e-2;
  auto model = BuildGoldenCudaModel(family, dtype);
  ASSERT_TRUE(model.ok()) << model.status();
  const int vocab = static_cast<int>((*model)->info().vocab_size);
  std::mt19937 rng(1234);
  double max_diff = 0;
  for (int ctx_len : {1, 63, 64, 65, 300}) {
    const std::vector<int32_t> ctx = RandomTokens(rng, ctx_len, vocab);
    const std::vector<int32_t> cont = RandomTokens(rng, 21, vocab);

    // From scratch: feed ctx ++ cont[:-1], score cont.
    std::vector<int32_t> tokens = ctx;
    tokens.insert(tokens.end(), cont.begin(), cont.end() - 1);
    std::vector<int32_t> targets(tokens.size(), -1);
    for (size_t i = 0; i < cont.size(); ++i) targets[ctx.size() - 1 + i] = cont[i];
    auto scratch_state = (*model)->NewState();
    auto scratch = RunOne(**model, scratch_state.get(), tokens, targets);
    ASSERT_TRUE(scratch.ok()) << scratch.status();

    // Fork: prefill ctx[:-1], snapshot, then feed ctx[-1] ++ cont[:-1] on two clones.
    auto prefix = (*model)->NewState();
    if (ctx_len > 1) {
      const std::vector<int32_t> head(ctx.begin(), ctx.end() - 1);
      ASSERT_TRUE(RunOne(**model, prefix.get(), head, {}).ok());
    }
    ASSERT_EQ(prefix->position(), ctx_len - 1);
    std::vector<int32_t> branch_tokens = {ctx.back()};
    branch_tokens.insert(branch_tokens.end(), cont.begin(), cont.end() - 1);
    std::vector<int32_t> branch_targets(cont.begin(), cont.end());
    auto fork_a = prefix->Clone();
    auto fork_b = prefix->Clone();
    ASSERT_NE(fork_a, nullptr);
    ASSERT_NE(fork_b, nullptr);
    auto a = RunOne(**model, fork_a.get(), branch_tokens, branch_targets);
    ASSERT_TRUE(a.ok()) << a.status();
    // Advance the source between the two forks: fork_b must not see it.
    ASSERT_TRUE(RunOne(**model, prefix.get(), RandomTokens(rng, 5, vocab), {}).ok());
    auto b = RunOne(**model, fork_b.get(), branch_tokens, branch_targets);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(fork_a->position(), static_cast<int64_t>(tokens.size()));

    for (size_t i = 0; i < cont.size(); ++i) {
      const float want = scratch->logprob[ctx.size() - 1 + i];
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(a->logprob[i]) - want));
      EXPECT_NEAR(a->logprob[i], want, bound)
          << family << " " << dtype << " ctx=" << ctx_len << " i=" << i;
      // Two forks of one snapshot fed the same tokens agree exactly.
      EXPECT_EQ(std::memcmp(&a->logprob[i], &b->logprob[i], sizeof(float)), 0)
          << "ctx=" << ctx_len << " i=" << i;
    }
  }
  // The margin, for the log: how near the bound a change of kernels has moved it.
  std::printf("[fork] %s %s: max |fork - scratch| = %.3g (bound %.3g)\n", family.c_str(),
              dtype.c_str(), max_diff, bound);
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, CudaForkTest, EveryFamilyAndDtype(), FamilyDtypeName);

// The wgmma flash kernel.
INSTANTIATE_TEST_SUITE_P(WgmmaAttention, CudaForkTest, WgmmaLlamaBf16(), FamilyDtypeName);

}  // namespace
}  // namespace hgeval::testing
