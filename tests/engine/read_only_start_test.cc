// ForwardItem::start: an item that continues from a read-only start state (how a task
// scores the choices of one context) gives bitwise the results of the same item run on a
// copy of that state, several such items may share one start in one call, and the start
// is left exactly as it was. Items with both or neither of state and start are refused.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"

namespace hgeval {
namespace {

std::vector<int32_t> RandomTokens(int n, int64_t vocab, std::mt19937& rng) {
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return ids;
}

class ReadOnlyStartTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReadOnlyStartTest, EqualsACopyAndLeavesTheStartUnchanged) {
  std::unique_ptr<Model> model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->info().vocab_size;
  std::mt19937 rng(11);
  const std::vector<int32_t> context = RandomTokens(70, vocab, rng);
  std::unique_ptr<SequenceState> start = model->NewState();
  {
    ForwardItem item;
    item.tokens = context;
    item.state = start.get();
    std::vector<ForwardOutput> out(1);
    ASSERT_TRUE(model->Forward({&item, 1}, absl::MakeSpan(out)).ok());
  }
  // Three choices of different lengths (one token too), each as a fork.
  std::vector<std::vector<int32_t>> choices = {
      RandomTokens(1, vocab, rng), RandomTokens(9, vocab, rng), RandomTokens(66, vocab, rng)};
  std::vector<std::vector<int32_t>> targets;
  for (const auto& c : choices)
    targets.push_back(RandomTokens(static_cast<int>(c.size()), vocab, rng));

  // From copies of the start.
  std::vector<ForwardOutput> copied(choices.size());
  for (size_t i = 0; i < choices.size(); ++i) {
    auto copy = CloneState(*start);
    ASSERT_TRUE(copy.ok());
    ForwardItem item;
    item.tokens = choices[i];
    item.targets = targets[i];
    item.state = copy->get();
    item.want_last_logprobs = true;
    ASSERT_TRUE(model->Forward({&item, 1}, absl::MakeSpan(&copied[i], 1)).ok());
  }
  // From the start itself, all three in one call.
  std::vector<ForwardItem> items(choices.size());
  for (size_t i = 0; i < choices.size(); ++i) {
    items[i].tokens = choices[i];
    items[i].targets = targets[i];
    items[i].start = start.get();
    items[i].want_last_logprobs = true;
  }
  std::vector<ForwardOutput> forked(choices.size());
  ASSERT_TRUE(model->Forward(items, absl::MakeSpan(forked)).ok());
  for (size_t i = 0; i < choices.size(); ++i) {
    // A one-token item on a state of its own may take the decode path where the backend
    // has one; the CPU computes it the same way either way.
    EXPECT_EQ(copied[i].logprob, forked[i].logprob) << "choice " << i;
    EXPECT_EQ(copied[i].argmax, forked[i].argmax) << "choice " << i;
    EXPECT_EQ(copied[i].last_logprobs, forked[i].last_logprobs) << "choice " << i;
  }
  // The start is unchanged: same position, and it continues as a fresh copy would.
  EXPECT_EQ(start->position(), static_cast<int64_t>(context.size()));
  auto again = CloneState(*start);
  ASSERT_TRUE(again.ok());
  ForwardItem next;
  next.tokens = choices[1];
  next.targets = targets[1];
  next.state = again->get();
  ForwardOutput after;
  ASSERT_TRUE(model->Forward({&next, 1}, absl::MakeSpan(&after, 1)).ok());
  EXPECT_EQ(after.logprob, copied[1].logprob);
}

TEST_P(ReadOnlyStartTest, BothOrNeitherOfStateAndStartIsRefused) {
  std::unique_ptr<Model> model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  std::unique_ptr<SequenceState> a = model->NewState(), b = model->NewState();
  const std::vector<int32_t> tokens = {1, 2};
  ForwardItem both;
  both.tokens = tokens;
  both.state = a.get();
  both.start = b.get();
  ForwardOutput out;
  EXPECT_EQ(model->Forward({&both, 1}, absl::MakeSpan(&out, 1)).code(),
            absl::StatusCode::kInvalidArgument);
  ForwardItem neither;
  neither.tokens = tokens;
  EXPECT_EQ(model->Forward({&neither, 1}, absl::MakeSpan(&out, 1)).code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, ReadOnlyStartTest,
                         ::testing::ValuesIn(testing::EngineTestModels()), testing::ModelTestName);

}  // namespace
}  // namespace hgeval
