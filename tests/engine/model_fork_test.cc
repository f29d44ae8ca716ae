// Forking a sequence's state (snapshot after a context, then continue) gives the same
// log-probs as scoring context + continuation from scratch, for every model family in
// engine_test_models.h, with contexts on both sides of the 64-token chunk boundary.
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"

namespace hgeval {
namespace {

constexpr double kForkTolerance = 1e-6;
constexpr int kContinuation = 17;

std::vector<int32_t> RandomTokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return ids;
}

ForwardOutput RunOne(Model& model, SequenceState* state, const std::vector<int32_t>& tokens,
                     const std::vector<int32_t>& targets, bool want_last = false) {
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.state = state;
  item.want_last_logprobs = want_last;
  std::vector<ForwardOutput> out(1);
  const absl::Status status = model.Forward({&item, 1}, absl::MakeSpan(out));
  EXPECT_TRUE(status.ok()) << status;
  return out[0];
}

class ModelForkTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelForkTest, ForkAfterContextEqualsScratch) {
  auto model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->info().vocab_size;
  for (int context : {1, 63, 64, 65, 300}) {
    SCOPED_TRACE("context " + std::to_string(context));
    const std::vector<int32_t> all = RandomTokens(context + kContinuation, vocab, 1000 + context);
    const std::vector<int32_t> ctx(all.begin(), all.begin() + context);
    const std::vector<int32_t> cont(all.begin() + context, all.end());

    // From scratch, in two runs so that the LM head sees the same rows as in the fork
    // runs below: log p(cont[0] | ctx) alone, and log p(cont[j] | ...) for j >= 1.
    std::vector<int32_t> first_target(all.size(), -1);
    first_target[context - 1] = cont[0];
    std::vector<int32_t> rest_targets(all.size(), -1);
    for (int j = 1; j < kContinuation; ++j) rest_targets[context - 1 + j] = cont[j];
    auto scratch_state = model->NewState();
    const ForwardOutput scratch_first = RunOne(*model, scratch_state.get(), all, first_target);
    EXPECT_EQ(scratch_state->position(), context + kContinuation);
    auto scratch_state2 = model->NewState();
    const ForwardOutput scratch = RunOne(*model, scratch_state2.get(), all, rest_targets);

    // The state after the context; its last log-probs score cont[0].
    auto prefix = model->NewState();
    const ForwardOutput prefill = RunOne(*model, prefix.get(), ctx, {}, /*want_last=*/true);
    ASSERT_EQ(prefix->position(), context);
    ASSERT_EQ(prefill.last_logprobs.size(), static_cast<size_t>(vocab));
    EXPECT_NEAR(prefill.last_logprobs[cont[0]], scratch_first.logprob[context - 1], kForkTolerance);

    // Two forks continue independently and leave the snapshot untouched.
    const std::vector<int32_t> fed(cont.begin(), cont.end() - 1);
    const std::vector<int32_t> fork_targets(cont.begin() + 1, cont.end());
    std::vector<ForwardOutput> forks;
    for (int f = 0; f < 2; ++f) {
      auto fork = prefix->Clone();
      ASSERT_EQ(fork->position(), context);
      forks.push_back(RunOne(*model, fork.get(), fed, fork_targets));
      EXPECT_EQ(fork->position(), context + kContinuation - 1);
      EXPECT_EQ(prefix->position(), context);
    }
    EXPECT_EQ(forks[0].logprob, forks[1].logprob) << "a fork changed the snapshot";
    double worst = 0.0;
    for (int j = 1; j < kContinuation; ++j) {
      const double diff = std::abs(forks[0].logprob[j - 1] - scratch.logprob[context - 1 + j]);
      worst = std::max(worst, diff);
      EXPECT_EQ(forks[0].argmax[j - 1], scratch.argmax[context - 1 + j]) << "token " << j;
    }
    EXPECT_LE(worst, kForkTolerance);

    // Through the runtime: Score with a snapshot of context[:-1] (the runtime's fork form:
    // the last context token is fed again by every branch) equals Score from nothing.
    ScoreRequest plain;
    plain.context = ctx;
    plain.continuation = cont;
    auto snapshot = Prefill(*model, absl::MakeConstSpan(ctx).subspan(0, context - 1));
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    ScoreRequest forked;
    forked.start = snapshot->get();
    forked.context = {ctx.back()};
    forked.continuation = cont;
    auto scored = Score(*model, {plain, forked});
    ASSERT_TRUE(scored.ok()) << scored.status();
    ASSERT_EQ((*scored)[0].token_logprobs.size(), cont.size());
    ASSERT_EQ((*scored)[1].token_logprobs.size(), cont.size());
    for (size_t j = 0; j < cont.size(); ++j) {
      // (Not compared with the Model-level runs above: those score other sets of rows, and
      // the LM head's products are not row-invariant.)
      EXPECT_NEAR((*scored)[0].token_logprobs[j], (*scored)[1].token_logprobs[j], kForkTolerance);
    }
    EXPECT_EQ((*snapshot)->position(), context - 1) << "Score modified its start state";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelForkTest, ::testing::ValuesIn(testing::EngineTestModels()),
                         testing::ModelTestName);

}  // namespace
}  // namespace hgeval
