// ForwardItem::want_last_argmax: the greedy next token without the vocabulary-sized
// log-probability row, equal to the argmax of the logits (lowest id on ties) for every
// model, and what greedy generation now decodes with.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/generation.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"

namespace hgeval {
namespace {

class LastArgmaxTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LastArgmaxTest, EqualsTheArgmaxOfTheLastLogits) {
  std::unique_ptr<Model> model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->info().vocab_size;
  for (int length : {1, 5, 64}) {
    std::vector<int32_t> tokens;
    for (int i = 0; i < length; ++i) tokens.push_back((i * 131 + 17) % (vocab - 3) + 3);
    std::unique_ptr<SequenceState> a = model->NewState(), b = model->NewState();
    ForwardItem argmax_only;
    argmax_only.tokens = tokens;
    argmax_only.state = a.get();
    argmax_only.want_last_argmax = true;
    ForwardItem everything = argmax_only;
    everything.state = b.get();
    everything.want_last_argmax = false;
    everything.want_all_logits = true;
    std::vector<ForwardOutput> out(2);
    ASSERT_TRUE(model->Forward({argmax_only, everything}, absl::MakeSpan(out)).ok());
    EXPECT_TRUE(out[0].last_logprobs.empty());
    const float* last = out[1].logits.data() + (length - 1) * vocab;
    const int32_t expected = static_cast<int32_t>(std::max_element(last, last + vocab) - last);
    EXPECT_EQ(out[0].last_argmax, expected) << "length " << length;
    EXPECT_EQ(out[1].last_argmax, -1);
  }
}

TEST_P(LastArgmaxTest, GreedyGenerationMatchesStepwiseArgmaxOfLogits) {
  std::unique_ptr<Model> model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->info().vocab_size;
  GenerateRequest request;
  request.prompt = {1, 5, 9, 13, 17};
  request.max_new_tokens = 12;
  absl::StatusOr<std::vector<GenerateResult>> generated = Generate(*model, nullptr, {&request, 1});
  ASSERT_TRUE(generated.ok()) << generated.status();
  // Re-derive each token from the logits of the whole sequence fed at once.
  std::vector<int32_t> fed = request.prompt;
  fed.insert(fed.end(), (*generated)[0].tokens.begin(), (*generated)[0].tokens.end() - 1);
  std::unique_ptr<SequenceState> state = model->NewState();
  ForwardItem item;
  item.tokens = fed;
  item.state = state.get();
  item.want_all_logits = true;
  std::vector<ForwardOutput> out(1);
  ASSERT_TRUE(model->Forward({&item, 1}, absl::MakeSpan(out)).ok());
  for (size_t n = 0; n < (*generated)[0].tokens.size(); ++n) {
    const float* row = out[0].logits.data() + (request.prompt.size() - 1 + n) * vocab;
    EXPECT_EQ((*generated)[0].tokens[n],
              static_cast<int32_t>(std::max_element(row, row + vocab) - row))
        << "step " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, LastArgmaxTest, ::testing::ValuesIn(testing::EngineTestModels()),
                         testing::ModelTestName);

}  // namespace
}  // namespace hgeval
