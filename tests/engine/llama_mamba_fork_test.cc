// Fork and batch invariance for LLaMA, Mamba and stories260K:
// - scoring context+continuation from scratch equals scoring the continuation from a fork
//   (snapshot) of the state after the context, for contexts of 1, 63, 64, 65, 300 tokens;
// - a sequence scored alone and inside a packed batch of 8 gives bitwise-equal log-probs;
// - Clone() is a deep copy.
#include <cmath>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

struct Case {
  const char* name;
  const char* path;
};

// gtest prints a parameter into the ctest name; its bytes would hold pointers that change
// from run to run.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const Case kCases[] = {
    {"llama", "tests/golden/llama"},
    {"mamba", "tests/golden/mamba"},
    {"stories260K", "data/models/stories260K/stories260K.bin"},
};

// Deterministic pseudo-random token ids in [0, vocab).
std::vector<int32_t> Tokens(int64_t n, int64_t vocab, uint64_t seed) {
  std::vector<int32_t> ids(n);
  uint64_t x = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& id : ids) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(vocab));
  }
  return ids;
}

class LlamaMambaForkTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    auto model = LoadModel(testing::SourcePath(GetParam().path), LoadOptions());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    vocab_ = model_->info().vocab_size;
  }
  std::unique_ptr<Model> model_;
  int64_t vocab_ = 0;
};

TEST_P(LlamaMambaForkTest, ForkEqualsScratch) {
  constexpr int kContinuation = 24;
  for (int64_t context_len : {1, 63, 64, 65, 300}) {
    const std::vector<int32_t> context = Tokens(context_len, vocab_, context_len);
    const std::vector<int32_t> continuation = Tokens(kContinuation, vocab_, 1000 + context_len);

    ScoreRequest scratch;
    scratch.context = context;
    scratch.continuation = continuation;
    // The fork: the state after context[:-1], then the last context token as the context.
    auto snapshot = Prefill(*model_, absl::MakeConstSpan(context).subspan(0, context_len - 1));
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_EQ((*snapshot)->position(), context_len - 1);
    ScoreRequest fork;
    fork.start = snapshot->get();
    fork.context = {context.back()};
    fork.continuation = continuation;

    auto results = Score(*model_, {scratch, fork});
    ASSERT_TRUE(results.ok()) << results.status();
    const ScoreResult& a = (*results)[0];
    const ScoreResult& b = (*results)[1];
    ASSERT_EQ(a.token_logprobs.size(), static_cast<size_t>(kContinuation));
    ASSERT_EQ(b.token_logprobs.size(), static_cast<size_t>(kContinuation));
    for (int j = 0; j < kContinuation; ++j) {
      EXPECT_NEAR(a.token_logprobs[j], b.token_logprobs[j], 1e-6)
          << "context " << context_len << " token " << j;
      EXPECT_LT(a.token_logprobs[j], 0.0f);
    }
    EXPECT_NEAR(a.logprob, b.logprob, 1e-6 * kContinuation) << "context " << context_len;
    EXPECT_EQ(a.greedy_tokens, b.greedy_tokens) << "context " << context_len;
    EXPECT_EQ((*snapshot)->position(), context_len - 1) << "Score must not advance the start";
  }
}

// Clone() continues independently: advancing the clone leaves the original as it was.
TEST_P(LlamaMambaForkTest, CloneIsDeepCopy) {
  const std::vector<int32_t> prefix = Tokens(40, vocab_, 7);
  auto state = Prefill(*model_, prefix);
  ASSERT_TRUE(state.ok()) << state.status();
  const std::vector<int32_t> probe = Tokens(5, vocab_, 8);
  ScoreRequest request;
  request.start = state->get();
  request.context = {probe[0]};
  request.continuation.assign(probe.begin() + 1, probe.end());
  auto before = Score(*model_, {request});
  ASSERT_TRUE(before.ok()) << before.status();

  std::unique_ptr<SequenceState> clone = (*state)->Clone();
  EXPECT_EQ(clone->position(), 40);
  EXPECT_GT(clone->bytes(), 0u);
  auto advanced = Prefill(*model_, Tokens(30, vocab_, 9), clone.get());
  ASSERT_TRUE(advanced.ok());
  // Feed the clone itself in place, too.
  const std::vector<int32_t> more = Tokens(3, vocab_, 10);
  ForwardItem item;
  item.tokens = more;
  item.state = clone.get();
  std::vector<ForwardOutput> out(1);
  ASSERT_TRUE(model_->Forward({&item, 1}, absl::MakeSpan(out)).ok());
  EXPECT_EQ(clone->position(), 43);
  EXPECT_EQ((*state)->position(), 40);

  auto after = Score(*model_, {request});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ((*before)[0].token_logprobs, (*after)[0].token_logprobs);
}

// Model::Forward: each of 8 sequences of different lengths (some continuing a non-empty
// state) alone and packed together: bitwise-equal log-probs, argmax and last log-probs.
TEST_P(LlamaMambaForkTest, BatchInvariance) {
  const int64_t lengths[8] = {1, 5, 63, 64, 65, 17, 300, 2};
  const int64_t starts[8] = {0, 0, 0, 12, 0, 1, 0, 100};
  std::vector<std::vector<int32_t>> tokens(8), targets(8);
  std::vector<std::unique_ptr<SequenceState>> start_states(8);
  for (int i = 0; i < 8; ++i) {
    tokens[i] = Tokens(lengths[i], vocab_, 50 + i);
    targets[i] = Tokens(lengths[i], vocab_, 80 + i);
    if (i % 3 == 0) targets[i][0] = -1;  // unscored positions too
    if (starts[i] > 0) {
      auto s = Prefill(*model_, Tokens(starts[i], vocab_, 90 + i));
      ASSERT_TRUE(s.ok()) << s.status();
      start_states[i] = std::move(*s);
    }
  }
  auto make_state = [&](int i) {
    return start_states[i] ? start_states[i]->Clone() : model_->NewState();
  };
  auto make_item = [&](int i, SequenceState* state) {
    ForwardItem item;
    item.tokens = tokens[i];
    item.targets = targets[i];
    item.state = state;
    item.want_last_logprobs = true;
    item.top_k = 3;
    return item;
  };

  std::vector<ForwardOutput> alone(8);
  for (int i = 0; i < 8; ++i) {
    auto state = make_state(i);
    ForwardItem item = make_item(i, state.get());
    ASSERT_TRUE(model_->Forward({&item, 1}, absl::MakeSpan(&alone[i], 1)).ok());
  }
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<ForwardItem> items;
  for (int i = 0; i < 8; ++i) {
    states.push_back(make_state(i));
    items.push_back(make_item(i, states.back().get()));
  }
  std::vector<ForwardOutput> packed(8);
  ASSERT_TRUE(model_->Forward(items, absl::MakeSpan(packed)).ok());
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(alone[i].logprob, packed[i].logprob) << "item " << i;
    EXPECT_EQ(alone[i].argmax, packed[i].argmax) << "item " << i;
    EXPECT_EQ(alone[i].is_greedy, packed[i].is_greedy) << "item " << i;
    EXPECT_EQ(alone[i].last_logprobs, packed[i].last_logprobs) << "item " << i;
    ASSERT_EQ(alone[i].top_k.size(), packed[i].top_k.size());
    EXPECT_EQ(states[i]->position(), starts[i] + lengths[i]);
  }
}

// The same through the runtime's packed scoring: alone vs packed with 7 others.
TEST_P(LlamaMambaForkTest, ScoreBatchInvariance) {
  std::vector<ScoreRequest> requests(8);
  for (int i = 0; i < 8; ++i) {
    requests[i].context = Tokens(1 + 37 * i, vocab_, 200 + i);
    requests[i].continuation = Tokens(1 + 3 * i, vocab_, 300 + i);
  }
  auto packed = Score(*model_, requests);
  ASSERT_TRUE(packed.ok()) << packed.status();
  for (int i = 0; i < 8; ++i) {
    auto alone = Score(*model_, {requests[i]});
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ((*alone)[0].token_logprobs, (*packed)[i].token_logprobs) << "request " << i;
    EXPECT_EQ((*alone)[0].logprob, (*packed)[i].logprob) << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, LlamaMambaForkTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.name;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace hgeval
