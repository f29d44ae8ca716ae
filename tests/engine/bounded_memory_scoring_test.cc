// Scoring under a memory bound (engine/runtime/prefix_scoring.h): for every model family,
// a byte bound so small that the prefix tree is walked in many waves, dropped prefix
// states are recomputed and batches are halved gives bitwise the results of an unbounded
// run; a request that cannot fit the host budget even alone is refused with its size.
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/prefix_scoring.h"
#include "engine/util/memory_budget.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"
#include "tests/support/scoped_budget_limit.h"
#include "tests/support/score_checks.h"

namespace hgeval {
namespace {

using testing::ExpectSameBits;

std::vector<int32_t> RandomTokens(std::mt19937& rng, int64_t n, int64_t vocab) {
  return testing::RandomTokenIds(rng, n, vocab);
}

// Documents whose contexts share long prefixes (a tree several levels deep), each context
// with several choices, some requests repeated, and a few unrelated ones.
std::vector<ScoreRequest> SharedPrefixRequests(int64_t vocab) {
  std::vector<ScoreRequest> requests = testing::SharedPrefixRequests(vocab, 20261126, 4, 30, 3);
  requests.push_back(requests[5]);  // identical requests are scored once
  std::mt19937 rng(11);
  for (int i = 0; i < 3; ++i) {
    ScoreRequest r;
    r.context = RandomTokens(rng, 1 + 9 * i, vocab);
    r.continuation = RandomTokens(rng, 2, vocab);
    requests.push_back(r);
  }
  return requests;
}

std::vector<std::string> BoundedScoringModels() {
  std::vector<std::string> models = testing::EngineTestModels();
  models.push_back("tests/golden/tnl");
  return models;
}

class BoundedMemoryScoringTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BoundedMemoryScoringTest, TinyStateBoundGivesTheUnboundedBits) {
  auto model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const std::vector<ScoreRequest> requests = SharedPrefixRequests(model->info().vocab_size);

  PrefixScoreOptions unbounded;
  unbounded.state_bytes = size_t{1} << 40;
  PrefixScoreStats wide;
  auto expected = ScoreWithPrefixReuse(*model, requests, unbounded, &wide);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(wide.waves, 1);
  EXPECT_EQ(wide.dropped_states, 0);

  // Room for about one deepest prefix chain: every context needs a wave of its own and
  // the prefix states of the waves before are dropped.
  PrefixScoreOptions bounded;
  bounded.state_bytes = 3 * model->StateBytes(120);
  PrefixScoreStats narrow;
  auto got = ScoreWithPrefixReuse(*model, requests, bounded, &narrow);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_GT(narrow.waves, 3);
  EXPECT_GT(narrow.dropped_states, 0);
  ExpectSameBits(*expected, *got);

  // Each request on its own (no reuse) under the same bound: the same requests in
  // batches of a different shape, still equal to scoring them one by one.
  PrefixScoreOptions alone_options = bounded;
  alone_options.context_reuse = false;
  auto alone = ScoreWithPrefixReuse(*model, requests, alone_options);
  ASSERT_TRUE(alone.ok()) << alone.status();
  for (size_t i = 0; i < requests.size(); ++i) {
    PrefixScoreOptions one = unbounded;
    one.context_reuse = false;
    auto single = ScoreWithPrefixReuse(*model, {requests[i]}, one);
    ASSERT_TRUE(single.ok()) << single.status();
    ExpectSameBits({(*alone)[i]}, *single);
  }
}

TEST_P(BoundedMemoryScoringTest, HostBudgetHalvesBatchesAndKeepsTheBits) {
  auto model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  MemoryBudget* budget = model->memory_budget();
  ASSERT_NE(budget, nullptr) << "CPU models are charged to the host budget";
  const std::vector<ScoreRequest> requests = SharedPrefixRequests(model->info().vocab_size);
  PrefixScoreOptions options;
  options.state_bytes = size_t{1} << 40;  // the scorer plans as if memory were plenty
  auto expected = ScoreWithPrefixReuse(*model, requests, options);
  ASSERT_TRUE(expected.ok()) << expected.status();

  // The budget itself fits the prefix states (fewer than 20, none past position 120) and
  // only a few more: the leaves' batches are refused before they run, and the scorer
  // halves them until they fit.
  PrefixScoreStats stats;
  absl::StatusOr<std::vector<ScoreResult>> got;
  {
    testing::ScopedBudgetLimit limit(budget, budget->held() + 23 * model->StateBytes(120));
    got = ScoreWithPrefixReuse(*model, requests, options, &stats);
  }
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_GT(stats.split_batches, 0);
  ExpectSameBits(*expected, *got);
}

INSTANTIATE_TEST_SUITE_P(Families, BoundedMemoryScoringTest,
                         ::testing::ValuesIn(BoundedScoringModels()), testing::ModelTestName);

TEST(BoundedMemoryScoring, RequestLargerThanTheBudgetIsRefusedWithItsSize) {
  auto model = testing::LoadTestModel("tests/golden/llama");
  ASSERT_NE(model, nullptr);
  MemoryBudget* budget = model->memory_budget();
  ASSERT_NE(budget, nullptr);
  std::mt19937 rng(7);
  ScoreRequest request;
  request.context = RandomTokens(rng, 250, model->info().vocab_size);
  request.continuation = RandomTokens(rng, 5, model->info().vocab_size);
  absl::StatusOr<std::vector<ScoreResult>> scored;
  {
    // A KV cache of 16 positions fits; one of 255 does not.
    testing::ScopedBudgetLimit limit(budget, budget->held() + model->StateBytes(16));
    scored = ScoreWithPrefixReuse(*model, {request}, PrefixScoreOptions{});
  }
  ASSERT_FALSE(scored.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(scored.status())) << scored.status();
  EXPECT_NE(scored.status().message().find("needs"), std::string::npos) << scored.status();
  EXPECT_NE(scored.status().message().find("budget of"), std::string::npos) << scored.status();
  // The model is unharmed: the same request fits once the budget allows it.
  auto again = ScoreWithPrefixReuse(*model, {request}, PrefixScoreOptions{});
  EXPECT_TRUE(again.ok()) << again.status();
}

}  // namespace
}  // namespace hgeval
