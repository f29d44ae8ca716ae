// The executor (server/exec/executor.h) over a result store, with a counting scorer in place of
// a model: what the store holds is answered without scoring, a call's duplicate pairs are
// scored once, a scorer's early-finished pairs are stored even when the call then fails,
// and no_cache (use_store false) scores everything again.
#include "server/exec/executor.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/store/sqlite_result_store.h"

namespace hgeval::server {
namespace {

TokenPair Pair(int32_t context, int32_t continuation) {
  TokenPair pair;
  pair.context = {1, context};
  pair.continuation = {continuation, continuation + 1};
  return pair;
}

// Scores a pair as -(context + continuation), its token logprobs -1 each; counts the pairs
// it was given.
class CountingScorer {
 public:
  PairScorer scorer() {
    return [this](const std::vector<TokenPair>& pairs, int, std::vector<ScoreResult>* results,
                  const FinishedPairs& finished) -> absl::Status {
      for (size_t k = 0; k < pairs.size(); ++k) {
        ScoreResult& r = (*results)[k];
        r.logprob = -static_cast<double>(pairs[k].context.back() + pairs[k].continuation[0]);
        r.is_greedy = pairs[k].continuation[0] % 2 == 0;
        r.token_logprobs.assign(pairs[k].continuation.size(), -1.0f);
      }
      scored_ += static_cast<int64_t>(pairs.size());
      if (fail_after_first_) {
        const size_t first[] = {0};
        if (absl::Status s = finished(first); !s.ok()) return s;
        return absl::InternalError("the model failed");
      }
      return absl::OkStatus();
    };
  }
  int64_t scored() const { return scored_; }
  void fail_after_first() { fail_after_first_ = true; }

 private:
  int64_t scored_ = 0;
  bool fail_after_first_ = false;
};

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenSqliteResultStore(":memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    model_.model_hash = "model-hash";
    model_.tokenizer_hash = "tokenizer-hash";
  }

  std::unique_ptr<ResultStore> store_;
  LoadedModel model_;
};

TEST_F(ExecutorTest, PairsTheStoreHoldsAreAnsweredWithoutScoring) {
  Executor executor(store_.get());
  CountingScorer counting;
  const std::vector<TokenPair> pairs = {Pair(5, 10), Pair(6, 11), Pair(7, 12)};
  absl::StatusOr<ScoreOutcome> first =
      executor.ScorePairs(model_, pairs, 0, true, CallControl(), counting.scorer());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->computed, 3);
  EXPECT_EQ(first->cached, 0);
  EXPECT_EQ(counting.scored(), 3);

  // The same pairs plus a new one: only the new one is scored.
  std::vector<TokenPair> again = pairs;
  again.push_back(Pair(8, 13));
  absl::StatusOr<ScoreOutcome> second =
      executor.ScorePairs(model_, again, 0, true, CallControl(), counting.scorer());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->cached, 3);
  EXPECT_EQ(second->computed, 1);
  EXPECT_EQ(counting.scored(), 4);
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_TRUE(second->results[i].cached) << i;
    EXPECT_EQ(second->results[i].score.logprob, first->results[i].score.logprob) << i;
    EXPECT_EQ(second->results[i].score.is_greedy, first->results[i].score.is_greedy) << i;
    EXPECT_EQ(second->results[i].continuation_tokens, 2) << i;
  }
  EXPECT_EQ(second->results[3].score.logprob, -(8 + 13));
  EXPECT_FALSE(second->results[3].cached);
}

TEST_F(ExecutorTest, DuplicatePairsInACallAreScoredOnceAndAnsweredAlike) {
  Executor executor(store_.get());
  CountingScorer counting;
  const std::vector<TokenPair> pairs = {Pair(5, 10), Pair(6, 11), Pair(5, 10), Pair(5, 10)};
  absl::StatusOr<ScoreOutcome> outcome =
      executor.ScorePairs(model_, pairs, 0, true, CallControl(), counting.scorer());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(counting.scored(), 2);
  EXPECT_EQ(outcome->computed, 2);
  ASSERT_EQ(outcome->results.size(), 4u);
  for (size_t i : {2, 3}) {
    EXPECT_EQ(outcome->results[i].score.logprob, -(5 + 10)) << i;
    EXPECT_EQ(outcome->results[i].score.token_logprobs, outcome->results[0].score.token_logprobs);
  }
  EXPECT_EQ(outcome->results[1].score.logprob, -(6 + 11));
}

TEST_F(ExecutorTest, PairsFinishedBeforeAFailureAreKept) {
  Executor executor(store_.get());
  CountingScorer failing;
  failing.fail_after_first();
  const std::vector<TokenPair> pairs = {Pair(5, 10), Pair(6, 11)};
  absl::StatusOr<ScoreOutcome> failed =
      executor.ScorePairs(model_, pairs, 0, true, CallControl(), failing.scorer());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInternal) << failed.status();

  CountingScorer counting;
  absl::StatusOr<ScoreOutcome> retried =
      executor.ScorePairs(model_, pairs, 0, true, CallControl(), counting.scorer());
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->cached, 1);
  EXPECT_EQ(counting.scored(), 1);
}

TEST_F(ExecutorTest, WithoutTheStoreEverythingIsScoredAgain) {
  Executor executor(store_.get());
  CountingScorer counting;
  const std::vector<TokenPair> pairs = {Pair(5, 10), Pair(6, 11)};
  ASSERT_TRUE(executor.ScorePairs(model_, pairs, 0, true, CallControl(), counting.scorer()).ok());
  absl::StatusOr<ScoreOutcome> uncached =
      executor.ScorePairs(model_, pairs, 0, false, CallControl(), counting.scorer());
  ASSERT_TRUE(uncached.ok()) << uncached.status();
  EXPECT_EQ(uncached->cached, 0);
  EXPECT_EQ(counting.scored(), 4);

  // Another model's hashes key other rows: nothing of the first model's is answered.
  LoadedModel other;
  other.model_hash = "other-model";
  other.tokenizer_hash = "tokenizer-hash";
  absl::StatusOr<ScoreOutcome> elsewhere =
      executor.ScorePairs(other, pairs, 0, true, CallControl(), counting.scorer());
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(elsewhere->cached, 0);
  EXPECT_EQ(counting.scored(), 6);
}

}  // namespace
}  // namespace hgeval::server
