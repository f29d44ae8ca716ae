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

// A model that reads a read-only start in place (ReadOnlyForkBytes 0, as the CUDA
// recurrent families do) and counts its Forward calls.
class InPlaceForkModel : public Model {
 public:
  explicit InPlaceForkModel(Model& model) : model_(model) {}
  const ModelInfo& info() const override { return model_.info(); }
  const ModelConfig& config() const override { return model_.config(); }
  std::unique_ptr<SequenceState> NewState() const override { return model_.NewState(); }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    ++forward_calls;
    return model_.Forward(items, outputs);
  }
  std::unique_ptr<SequenceState> NewStateFor(const SequenceState* start,
                                             int64_t tokens) const override {
    return model_.NewStateFor(start, tokens);
  }
  size_t StateBytes(int64_t tokens) const override { return model_.StateBytes(tokens); }
  size_t ReadOnlyForkBytes(int64_t, int64_t) const override { return in_place ? 0 : copy_bytes; }

  bool in_place = true;
  size_t copy_bytes = 0;
  int forward_calls = 0;

 private:
  Model& model_;
};

TEST_P(BoundedMemoryScoringTest, ForksReadingTheirStartInPlaceShareOneForwardCall) {
  auto loaded = testing::LoadTestModel(GetParam());
  ASSERT_NE(loaded, nullptr);
  InPlaceForkModel model(*loaded);
  // One context, 40 choices: the context's state and then the forks of it.
  std::mt19937 rng(7);
  const std::vector<int32_t> context = RandomTokens(rng, 30, model.info().vocab_size);
  std::vector<ScoreRequest> requests(40);
  for (ScoreRequest& r : requests) {
    r.context = context;
    r.continuation = RandomTokens(rng, 3, model.info().vocab_size);
  }
  PrefixScoreOptions options;
  options.state_bytes = 4 * model.StateBytes(40);  // the prefix state and a few more

  // Forks that copy their start: a few fit beside the prefix state at a time.
  model.in_place = false;
  model.copy_bytes = model.StateBytes(40);
  auto copied = ScoreWithPrefixReuse(model, requests, options);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_GT(model.forward_calls, 10);

  // Forks that read it in place hold nothing: all 40 run in one call after the context's.
  model.in_place = true;
  model.forward_calls = 0;
  auto in_place = ScoreWithPrefixReuse(model, requests, options);
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  EXPECT_EQ(model.forward_calls, 2);
  ExpectSameBits(*copied, *in_place);
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
