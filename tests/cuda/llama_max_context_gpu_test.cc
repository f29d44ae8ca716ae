// LoadOptions::max_context on the CUDA backend: a LLaMA refuses positions past
// max_position_embeddings by default (as on the CPU), runs past them when the load asks for
// a longer context, and computes the positions inside the training length as before.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/cuda_models.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

absl::StatusOr<std::unique_ptr<Model>> CudaLlama(int64_t max_context) {
  absl::StatusOr<std::unique_ptr<Checkpoint>> ckpt =
      OpenCheckpoint(testing::SourcePath("tests/golden/llama"));
  if (!ckpt.ok()) return ckpt.status();
  absl::StatusOr<ModelConfig> config = ParseModelConfig((*ckpt)->config());
  if (!config.ok()) return config.status();
  LoadOptions options;
  options.device = "cuda";
  options.max_context = max_context;
  return cuda::BuildCudaModel(**ckpt, *config, options);
}

std::vector<int32_t> Tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>((i * 7919 + 13) % vocab);
  return ids;
}

TEST(CudaLlamaMaxContextTest, RefusesPastTheLimitUnlessExtended) {
  if (!testing::HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  absl::StatusOr<std::unique_ptr<Model>> plain = CudaLlama(0);
  ASSERT_TRUE(plain.ok()) << plain.status();
  const int64_t limit = (*plain)->config().max_position_embeddings;
  ASSERT_EQ((*plain)->info().max_context, limit);
  const std::vector<int32_t> tokens = Tokens(limit + 1, (*plain)->info().vocab_size);
  std::vector<int32_t> targets(tokens.size(), -1);
  for (size_t t = 0; t + 1 < tokens.size(); ++t) targets[t] = tokens[t + 1];

  // Default: one token too many is refused, and the state is not advanced.
  std::unique_ptr<SequenceState> state = (*plain)->NewState();
  absl::StatusOr<ForwardOutput> refused = testing::RunOne(**plain, state.get(), tokens, targets);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("maximum context"), std::string::npos);
  EXPECT_EQ(state->position(), 0);

  // Extended: accepted; the positions inside the training length are computed as before.
  absl::StatusOr<std::unique_ptr<Model>> extended = CudaLlama(2 * limit);
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_EQ((*extended)->info().max_context, 2 * limit);
  EXPECT_EQ((*extended)->config().max_position_embeddings, limit);
  std::unique_ptr<SequenceState> long_state = (*extended)->NewState();
  absl::StatusOr<ForwardOutput> accepted =
      testing::RunOne(**extended, long_state.get(), tokens, targets);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_EQ(long_state->position(), limit + 1);

  const std::vector<int32_t> inside(tokens.begin(), tokens.begin() + limit);
  const std::vector<int32_t> inside_targets(targets.begin(), targets.begin() + limit);
  std::unique_ptr<SequenceState> reference_state = (*plain)->NewState();
  absl::StatusOr<ForwardOutput> reference =
      testing::RunOne(**plain, reference_state.get(), inside, inside_targets);
  ASSERT_TRUE(reference.ok()) << reference.status();
  // fp32; a different sequence length may pick other GEMM tilings, hence the fork tests'
  // fp32 bound rather than bitwise equality.
  for (int64_t t = 0; t + 1 < limit; ++t) {
    EXPECT_NEAR(accepted->logprob[t], reference->logprob[t], 1e-4) << "position " << t;
  }
}

}  // namespace
}  // namespace hgeval
