// The runtime layer (Score, PrefillWithSnapshots, Generate) on real golden checkpoints:
// it must add nothing to and lose nothing from what the model computes.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

class RuntimeGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string dir = testing::SourcePath("tests/golden/" + GetParam());
    auto model = LoadModel(dir, LoadOptions{});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    auto expected = testing::ReadGoldenExpectations(dir);
    ASSERT_TRUE(expected.ok()) << expected.status();
    expected_ = *std::move(expected);
    longest_ = expected_.cases.back().ids;
    ASSERT_EQ(longest_.size(), 300u);
  }
  std::unique_ptr<Model> model_;
  testing::GoldenExpectations expected_;
  std::vector<int32_t> longest_;
};

TEST_P(RuntimeGoldenTest, ScoreEqualsTailLogprobOfTheReference) {
  for (const auto& c : expected_.cases) {
    if (c.ids.size() < 2) continue;
    ScoreRequest request;
    request.context = {c.ids[0]};
    request.continuation.assign(c.ids.begin() + 1, c.ids.end());
    auto results = Score(*model_, absl::MakeConstSpan(&request, 1));
    ASSERT_TRUE(results.ok()) << results.status();
    EXPECT_NEAR((*results)[0].logprob, c.tail_logprob, 1e-3) << "T=" << c.ids.size();
    EXPECT_EQ((*results)[0].token_logprobs.size(), c.ids.size() - 1);
  }
}

TEST_P(RuntimeGoldenTest, BranchesFromSnapshotsEqualOneLongRun) {
  ScoreRequest whole;
  whole.context = {longest_[0]};
  whole.continuation.assign(longest_.begin() + 1, longest_.end());
  auto reference = Score(*model_, absl::MakeConstSpan(&whole, 1));
  ASSERT_TRUE(reference.ok()) << reference.status();
  // Fork after cut-1 tokens; the branch's context is the cut's last token.
  const std::vector<int64_t> prefixes = {0, 63, 64, 199};
  auto snapshots = PrefillWithSnapshots(*model_, longest_, prefixes);
  ASSERT_TRUE(snapshots.ok()) << snapshots.status();
  std::vector<ScoreRequest> branches(prefixes.size());
  for (size_t c = 0; c < prefixes.size(); ++c) {
    EXPECT_EQ((*snapshots)[c]->position(), prefixes[c]);
    branches[c].start = (*snapshots)[c].get();
    branches[c].context = {longest_[prefixes[c]]};
    branches[c].continuation.assign(longest_.begin() + prefixes[c] + 1, longest_.end());
  }
  // All branches in one packed call.
  auto scored = Score(*model_, branches);
  ASSERT_TRUE(scored.ok()) << scored.status();
  for (size_t c = 0; c < prefixes.size(); ++c) {
    for (size_t j = 0; j < branches[c].continuation.size(); ++j) {
      ASSERT_NEAR((*scored)[c].token_logprobs[j], (*reference)[0].token_logprobs[prefixes[c] + j],
                  1e-6)
          << "prefix " << prefixes[c] << " token " << j;
    }
  }
  // Snapshots are not consumed by scoring: the same branch again gives the same numbers.
  auto again = Score(*model_, absl::MakeConstSpan(&branches[2], 1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].token_logprobs, (*scored)[2].token_logprobs);
}

TEST_P(RuntimeGoldenTest, GreedyGenerationReproducesTheReference) {
  GenerateRequest request;
  request.prompt = expected_.greedy_prompt;
  request.max_new_tokens = static_cast<int>(expected_.greedy_output.size());
  // Two greedy copies decoded together with a sampled one: batching must not change them.
  GenerateRequest sampled = request;
  sampled.sampling = {.temperature = 0.8f, .top_p = 0.9f, .seed = 5};
  const std::vector<GenerateRequest> requests = {request, sampled, request};
  auto results = Generate(*model_, nullptr, requests);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0].tokens, expected_.greedy_output);
  EXPECT_EQ((*results)[2].tokens, expected_.greedy_output);
  EXPECT_EQ((*results)[0].finish_reason, FinishReason::kLength);
  // The sampled one is reproducible from its seed, alone.
  auto again = Generate(*model_, nullptr, absl::MakeConstSpan(&sampled, 1));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0].tokens, (*results)[1].tokens);
}

TEST_P(RuntimeGoldenTest, GenerationStopsAtAStopToken) {
  GenerateRequest request;
  request.prompt = expected_.greedy_prompt;
  request.max_new_tokens = 16;
  request.stop_tokens = {expected_.greedy_output[3]};
  auto results = Generate(*model_, nullptr, absl::MakeConstSpan(&request, 1));
  ASSERT_TRUE(results.ok()) << results.status();
  const auto& want = expected_.greedy_output;
  const auto first_stop = std::find(want.begin(), want.end(), want[3]) - want.begin();
  EXPECT_EQ((*results)[0].finish_reason, FinishReason::kStopToken);
  EXPECT_EQ((*results)[0].tokens, std::vector<int32_t>(want.begin(), want.begin() + first_stop));
}

TEST_P(RuntimeGoldenTest, RejectsEmptyContinuationAndOutOfRangeIds) {
  ScoreRequest empty;
  empty.context = {1};
  EXPECT_EQ(Score(*model_, absl::MakeConstSpan(&empty, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  ScoreRequest bad;
  bad.context = {1};
  bad.continuation = {static_cast<int32_t>(model_->info().vocab_size)};
  EXPECT_EQ(Score(*model_, absl::MakeConstSpan(&bad, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  GenerateRequest no_prompt;
  EXPECT_EQ(Generate(*model_, nullptr, absl::MakeConstSpan(&no_prompt, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Families, RuntimeGoldenTest,
                         ::testing::Values("hgrn2", "hgrn", "gla", "llama", "mamba"));

}  // namespace
}  // namespace hgeval
