// LoadOptions::max_context: a LLaMA refuses positions past max_position_embeddings by
// default, and runs past it (RoPE extrapolation) when the load asks for a longer context,
// with the positions inside the training length computed exactly as before.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using hgeval::testing::SourcePath;

// Deterministic pseudo-random token ids in [0, vocab).
std::vector<int32_t> Tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(n);
  uint64_t x = 88172645463325252ull;
  for (auto& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(vocab));
  }
  return ids;
}

std::unique_ptr<Model> LoadGoldenLlama(int64_t max_context) {
  LoadOptions options;
  options.threads = 2;
  options.max_context = max_context;
  auto model = LoadModel(SourcePath("tests/golden/llama"), options);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

// Feeds `tokens` to a fresh state; targets are the next tokens (the last one unscored).
absl::Status FeedFresh(Model& model, const std::vector<int32_t>& tokens, ForwardOutput* out) {
  std::vector<int32_t> targets(tokens.begin() + 1, tokens.end());
  targets.push_back(-1);
  std::unique_ptr<SequenceState> state = model.NewState();
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.state = state.get();
  return model.Forward({&item, 1}, {out, 1});
}

TEST(LlamaMaxContextTest, DefaultRefusesPastMaxPositionEmbeddings) {
  std::unique_ptr<Model> model = LoadGoldenLlama(0);
  ASSERT_NE(model, nullptr);
  const int64_t trained = model->config().max_position_embeddings;
  ASSERT_EQ(trained, 1024);  // tests/golden/llama/config.json
  EXPECT_EQ(model->info().max_context, trained);

  ForwardOutput out;
  const absl::Status status =
      FeedFresh(*model, Tokens(trained + 1, model->info().vocab_size), &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;

  // Filling the context exactly is fine; one more token on top of it is not.
  std::unique_ptr<SequenceState> state = model->NewState();
  const std::vector<int32_t> tokens = Tokens(trained + 1, model->info().vocab_size);
  ForwardItem item;
  item.tokens = absl::MakeConstSpan(tokens).subspan(0, trained);
  item.state = state.get();
  ASSERT_TRUE(model->Forward({&item, 1}, {&out, 1}).ok());
  item.tokens = absl::MakeConstSpan(tokens).subspan(trained, 1);
  EXPECT_EQ(model->Forward({&item, 1}, {&out, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(state->position(), trained);  // a refused batch changes nothing
}

TEST(LlamaMaxContextTest, OverrideRunsPastTrainingLengthWithUnchangedPrefix) {
  std::unique_ptr<Model> base = LoadGoldenLlama(0);
  ASSERT_NE(base, nullptr);
  const int64_t trained = base->config().max_position_embeddings;
  std::unique_ptr<Model> extended = LoadGoldenLlama(2 * trained);
  ASSERT_NE(extended, nullptr);
  EXPECT_EQ(extended->info().max_context, 2 * trained);
  // The config still says what the checkpoint was trained at (the heatmap's dashed line).
  EXPECT_EQ(extended->config().max_position_embeddings, trained);

  const std::vector<int32_t> tokens = Tokens(2 * trained, base->info().vocab_size);
  ForwardOutput long_out;
  ASSERT_TRUE(FeedFresh(*extended, tokens, &long_out).ok());
  ASSERT_EQ(long_out.logprob.size(), tokens.size());

  const std::vector<int32_t> prefix(tokens.begin(), tokens.begin() + trained);
  ForwardOutput base_out;
  ASSERT_TRUE(FeedFresh(*base, prefix, &base_out).ok());
  // Positions 0 .. trained-2 have the same target in both runs (the last prefix position
  // is unscored in the base run): bitwise equal log-probs.
  for (int64_t t = 0; t + 1 < trained; ++t) {
    ASSERT_EQ(long_out.logprob[t], base_out.logprob[t]) << "position " << t;
    ASSERT_EQ(long_out.argmax[t], base_out.argmax[t]) << "position " << t;
  }
  // Past the training length the model still produces finite log-probabilities.
  for (int64_t t = trained; t + 1 < 2 * trained; ++t) {
    ASSERT_TRUE(std::isfinite(long_out.logprob[t])) << "position " << t;
    ASSERT_LT(long_out.logprob[t], 0.0f) << "position " << t;
  }

  // The override is a limit too.
  ForwardOutput out;
  const absl::Status status =
      FeedFresh(*extended, Tokens(2 * trained + 1, base->info().vocab_size), &out);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

TEST(LlamaMaxContextTest, RecurrentModelsStayUnbounded) {
  LoadOptions options;
  options.threads = 2;
  options.max_context = 64;
  auto model = LoadModel(SourcePath("tests/golden/hgrn2"), options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->info().max_context, 0);
  ForwardOutput out;
  EXPECT_TRUE(FeedFresh(**model, Tokens(100, (*model)->info().vocab_size), &out).ok());
}

TEST(LlamaMaxContextTest, NegativeOverrideIsRejected) {
  LoadOptions options;
  options.max_context = -1;
  auto model = LoadModel(SourcePath("tests/golden/llama"), options);
  EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hgeval
