// EngineLanguageModel::ScoreTokenTargets on the golden LLaMA: the argmax at each scored
// position equals the greedy flag's view of Loglikelihood on the same tokens, requests
// are checked (target count, vocabulary, context length), and cancellation stops a call.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/models/engine_language_model.h"
#include "tests/tasks/model_fixtures.h"

namespace hgeval::tasks {
namespace {

class EngineTokenTargetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = hgeval::testing::LoadFixtureModel("llama");
    ASSERT_TRUE(model.ok()) << model.status();
    loaded_ = std::move(*model);
    auto tokenizer = hgeval::testing::LoadTok512();
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = std::move(*tokenizer);
    lm_ = std::make_unique<EngineLanguageModel>(loaded_.model.get(), tokenizer_.get(),
                                                EngineLanguageModelOptions{});
  }

  hgeval::testing::LoadedModel loaded_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<EngineLanguageModel> lm_;
};

TEST_F(EngineTokenTargetsTest, ArgmaxAgreesWithGreedyFlagsOfTokenScoring) {
  const std::vector<int32_t> tokens = {5, 77, 300, 12, 9, 401, 33, 250};
  TokenTargetsRequest request;
  request.tokens = tokens;
  request.targets.assign(tokens.size(), -1);
  request.targets[2] = 100;
  request.targets[5] = 7;
  auto first = lm_->ScoreTokenTargets({request});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ((*first)[0].argmax.size(), 2u);
  EXPECT_EQ((*first)[0].n_tokens, 2);
  // Scoring the predicted token after the same prefix must be greedy, and its log-prob
  // is what the token-targets call summed when the target was that token.
  double logprob_sum = 0;
  for (int k = 0; k < 2; ++k) {
    const size_t t = k == 0 ? 2 : 5;
    TokenizedRequest scored;
    scored.context.assign(tokens.begin(), tokens.begin() + t + 1);
    scored.continuation = {(*first)[0].argmax[k]};
    auto result = lm_->ScoreTokens({scored});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE((*result)[0].is_greedy) << t;
    request.targets[t] = (*first)[0].argmax[k];
    logprob_sum += (*result)[0].logprob;
  }
  auto second = lm_->ScoreTokenTargets({request});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)[0].argmax, (*first)[0].argmax);
  EXPECT_NEAR((*second)[0].logprob, logprob_sum, 1e-5);
}

TEST_F(EngineTokenTargetsTest, RejectsMalformedRequests) {
  TokenTargetsRequest mismatched{{1, 2, 3}, {-1, 4}};
  EXPECT_EQ(lm_->ScoreTokenTargets({mismatched}).status().code(),
            absl::StatusCode::kInvalidArgument);
  TokenTargetsRequest empty;
  EXPECT_EQ(lm_->ScoreTokenTargets({empty}).status().code(), absl::StatusCode::kInvalidArgument);
  TokenTargetsRequest bad_target{{1, 2}, {-1, 512}};
  EXPECT_EQ(lm_->ScoreTokenTargets({bad_target}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // The golden LLaMA's context is 1024 positions.
  TokenTargetsRequest too_long;
  too_long.tokens.assign(1025, 3);
  too_long.targets.assign(1025, -1);
  auto status = lm_->ScoreTokenTargets({too_long}).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("context of 1024"), std::string::npos) << status;
}

TEST_F(EngineTokenTargetsTest, CancelledCallStops) {
  TokenTargetsRequest request{{1, 2, 3}, {-1, 4, -1}};
  CallOptions call;
  call.cancelled = [] { return true; };
  EXPECT_EQ(lm_->ScoreTokenTargets({request}, call).status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace hgeval::tasks
