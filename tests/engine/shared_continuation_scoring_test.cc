// Sharing continuation prefixes (PrefixScoreOptions::share_continuations, what the
// server's CPU scoring rounds use): for every model family, echo prompts scored from
// their first token, a question's choices, requests whose tokens are a prefix of
// another's and the same tokens split at different places give bitwise the results of
// scoring each request alone, top-k alternatives included, under any state bound, while
// feeding fewer tokens.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/runtime/prefix_scoring.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"
#include "tests/support/score_checks.h"

namespace hgeval {
namespace {

using testing::ExpectSameBits;

// The same token sequence scored from `context_tokens` on.
ScoreRequest Split(const std::vector<int32_t>& tokens, size_t context_tokens, int top_k) {
  ScoreRequest r;
  r.context.assign(tokens.begin(), tokens.begin() + context_tokens);
  r.continuation.assign(tokens.begin() + context_tokens, tokens.end());
  r.top_k = top_k;
  return r;
}

std::vector<ScoreRequest> MixedRequests(int64_t vocab) {
  std::vector<ScoreRequest> requests;
  const std::vector<ScoreRequest> questions =
      testing::SharedPrefixRequests(vocab, 20261126, 3, 20, 4);
  for (size_t i = 0; i < questions.size(); ++i) {
    std::vector<int32_t> tokens = questions[i].context;
    tokens.insert(tokens.end(), questions[i].continuation.begin(), questions[i].continuation.end());
    // Echo prompts (lm-eval over /v1/completions), with and without alternatives, and
    // the question form itself.
    requests.push_back(Split(tokens, 1, 1));
    if (i % 3 == 0) requests.push_back(Split(tokens, 1, 0));
    if (i % 4 == 1) requests.push_back(Split(tokens, questions[i].context.size(), 0));
    if (i % 5 == 2) requests.push_back(Split(tokens, tokens.size() / 2, 1));
  }
  // A sequence that is a prefix of another, and one of a single scored token.
  std::vector<int32_t> longer = requests[0].context;
  longer.insert(longer.end(), requests[0].continuation.begin(), requests[0].continuation.end());
  requests.push_back(Split(std::vector<int32_t>(longer.begin(), longer.begin() + 9), 1, 1));
  requests.push_back(Split(std::vector<int32_t>(longer.begin(), longer.begin() + 2), 1, 1));
  requests.push_back(requests[3]);  // identical requests are scored once
  return requests;
}

void ExpectSameAlternatives(const std::vector<ScoreResult>& a, const std::vector<ScoreResult>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].top_k.size(), b[i].top_k.size()) << "request " << i;
    for (size_t j = 0; j < a[i].top_k.size(); ++j) {
      ASSERT_EQ(a[i].top_k[j].size(), b[i].top_k[j].size());
      for (size_t k = 0; k < a[i].top_k[j].size(); ++k) {
        EXPECT_EQ(a[i].top_k[j][k].token, b[i].top_k[j][k].token);
        EXPECT_EQ(std::memcmp(&a[i].top_k[j][k].logprob, &b[i].top_k[j][k].logprob, sizeof(float)),
                  0);
      }
    }
  }
}

class SharedContinuationScoringTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedContinuationScoringTest, GivesTheBitsOfEachRequestAloneWithFewerTokens) {
  auto model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const std::vector<ScoreRequest> requests = MixedRequests(model->info().vocab_size);

  std::vector<ScoreResult> alone;
  int64_t alone_tokens = 0;
  for (const ScoreRequest& r : requests) {
    PrefixScoreOptions one;
    one.context_reuse = false;
    PrefixScoreStats stats;
    auto single = ScoreWithPrefixReuse(*model, {r}, one, &stats);
    ASSERT_TRUE(single.ok()) << single.status();
    alone.push_back((*single)[0]);
    alone_tokens += stats.tokens_fed;
  }

  PrefixScoreOptions shared;
  shared.share_continuations = true;
  shared.state_bytes = size_t{1} << 40;
  PrefixScoreStats wide;
  auto got = ScoreWithPrefixReuse(*model, requests, shared, &wide);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSameBits(alone, *got);
  ExpectSameAlternatives(alone, *got);
  EXPECT_LT(wide.tokens_fed * 2, alone_tokens);

  // A bound that drops and recomputes the shared prefixes: the same bits.
  PrefixScoreOptions bounded = shared;
  bounded.state_bytes = 3 * model->StateBytes(120);
  PrefixScoreStats narrow;
  auto again = ScoreWithPrefixReuse(*model, requests, bounded, &narrow);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_GT(narrow.waves, 1);
  ExpectSameBits(alone, *again);
  ExpectSameAlternatives(alone, *again);
}

std::vector<std::string> Models() {
  std::vector<std::string> models = testing::EngineTestModels();
  models.push_back("tests/golden/tnl");
  return models;
}

INSTANTIATE_TEST_SUITE_P(Families, SharedContinuationScoringTest, ::testing::ValuesIn(Models()),
                         testing::ModelTestName);

}  // namespace
}  // namespace hgeval
