// A sequence's results do not depend on what else is in its batch: scored alone and inside
// a packed batch with 7 others of different lengths (in either order), every output is
// bitwise equal. Runs on every model in engine_test_models.h.
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"

namespace hgeval {
namespace {

struct Sequence {
  std::vector<int32_t> prefix;  // fed first (alone) to build the start state
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets;
  bool want_last = false;
  int top_k = 0;
};

std::vector<Sequence> MakeSequences(int64_t vocab) {
  std::mt19937 rng(7);
  auto draw = [&](int n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    return ids;
  };
  std::vector<Sequence> seqs;
  const int lengths[8] = {300, 1, 7, 64, 65, 33, 129, 2};
  for (int i = 0; i < 8; ++i) {
    Sequence s;
    s.tokens = draw(lengths[i]);
    s.targets = draw(lengths[i]);
    for (size_t t = 0; t < s.targets.size(); t += 5) s.targets[t] = -1;  // some unscored
    s.want_last = i % 2 == 0;
    s.top_k = i % 3 == 0 ? 4 : 0;
    if (i == 2 || i == 5) s.prefix = draw(10 + i);  // continue a non-empty state
    seqs.push_back(std::move(s));
  }
  return seqs;
}

void ExpectSame(const ForwardOutput& a, const ForwardOutput& b) {
  EXPECT_EQ(a.logprob, b.logprob);
  EXPECT_EQ(a.is_greedy, b.is_greedy);
  EXPECT_EQ(a.argmax, b.argmax);
  EXPECT_EQ(a.last_logprobs, b.last_logprobs);
  ASSERT_EQ(a.top_k.size(), b.top_k.size());
  for (size_t t = 0; t < a.top_k.size(); ++t) {
    ASSERT_EQ(a.top_k[t].size(), b.top_k[t].size());
    for (size_t j = 0; j < a.top_k[t].size(); ++j) {
      EXPECT_EQ(a.top_k[t][j].token, b.top_k[t][j].token);
      EXPECT_EQ(a.top_k[t][j].logprob, b.top_k[t][j].logprob);
    }
  }
}

class ModelBatchInvarianceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelBatchInvarianceTest, AloneEqualsPackedBitwise) {
  auto model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const std::vector<Sequence> seqs = MakeSequences(model->info().vocab_size);
  const size_t n = seqs.size();

  // Start states (empty or after a prefix), cloned for every run.
  std::vector<std::unique_ptr<SequenceState>> starts;
  for (const Sequence& s : seqs) {
    auto state = model->NewState();
    if (!s.prefix.empty()) {
      ForwardItem item;
      item.tokens = s.prefix;
      item.state = state.get();
      std::vector<ForwardOutput> out(1);
      ASSERT_TRUE(model->Forward({&item, 1}, absl::MakeSpan(out)).ok());
    }
    starts.push_back(std::move(state));
  }
  auto make_item = [&](size_t i, SequenceState* state) {
    ForwardItem item;
    item.tokens = seqs[i].tokens;
    item.targets = seqs[i].targets;
    item.state = state;
    item.want_last_logprobs = seqs[i].want_last;
    item.top_k = seqs[i].top_k;
    return item;
  };

  std::vector<ForwardOutput> alone(n);
  for (size_t i = 0; i < n; ++i) {
    auto state = starts[i]->Clone();
    ForwardItem item = make_item(i, state.get());
    ASSERT_TRUE(model->Forward({&item, 1}, absl::MakeSpan(&alone[i], 1)).ok());
  }

  for (bool reversed : {false, true}) {
    SCOPED_TRACE(reversed ? "reversed batch" : "batch");
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = reversed ? n - 1 - i : i;
    std::vector<std::unique_ptr<SequenceState>> states;
    std::vector<ForwardItem> items;
    for (size_t i : order) {
      states.push_back(starts[i]->Clone());
      items.push_back(make_item(i, states.back().get()));
    }
    std::vector<ForwardOutput> packed(n);
    const absl::Status status = model->Forward(items, absl::MakeSpan(packed));
    ASSERT_TRUE(status.ok()) << status;
    for (size_t j = 0; j < n; ++j) {
      SCOPED_TRACE("sequence " + std::to_string(order[j]));
      ExpectSame(alone[order[j]], packed[j]);
      EXPECT_EQ(states[j]->position(),
                static_cast<int64_t>(seqs[order[j]].prefix.size() + seqs[order[j]].tokens.size()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ModelBatchInvarianceTest,
                         ::testing::ValuesIn(testing::EngineTestModels()), testing::ModelTestName);

}  // namespace
}  // namespace hgeval
