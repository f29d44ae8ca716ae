// ForwardItem::start on the GPU: forks that read one context state in place (the
// recurrent families read it where it is; LLaMA copies its KV cache internally) give
// bitwise the results of the same items run on copies of the state, in one packed call,
// and leave the context state as it was; so does a fork longer than a pack, whose later
// segments continue from the state its earlier ones left.
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/cuda/token_mixer.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/cuda/family_params.h"

namespace hgeval::testing {
namespace {

class CudaReadOnlyStartTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
    const auto& [family, dtype] = GetParam();
    auto model = BuildGoldenCudaModel(family, dtype);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
  }
  std::vector<int32_t> RandomTokens(int64_t n) {
    std::uniform_int_distribution<int> dist(0, static_cast<int>(model_->info().vocab_size) - 1);
    std::vector<int32_t> v(n);
    for (auto& x : v) x = dist(rng_);
    return v;
  }
  // A state that has read a 70-token context: the start the forks continue from.
  std::unique_ptr<SequenceState> Context() {
    auto context = model_->NewState();
    EXPECT_TRUE(RunOne(*model_, context.get(), RandomTokens(70), {}).ok());
    return context;
  }

  std::unique_ptr<Model> model_;
  std::mt19937 rng_{5};
};

TEST_P(CudaReadOnlyStartTest, ForksInPlaceEqualCopies) {
  Model& m = *model_;
  auto context = Context();
  // Choices of 2 to 130 tokens (one token would take the decode path on a state of its
  // own, a different kernel, so it is compared in the CPU test only).
  std::vector<std::vector<int32_t>> choices, targets;
  for (int len : {2, 9, 64, 66, 130}) {
    choices.push_back(RandomTokens(len));
    targets.push_back(RandomTokens(len));
  }
  std::vector<ForwardOutput> copied(choices.size());
  for (size_t i = 0; i < choices.size(); ++i) {
    auto copy = context->Clone();
    ASSERT_NE(copy, nullptr);
    auto out = RunOne(m, copy.get(), choices[i], targets[i], /*want_last=*/true);
    ASSERT_TRUE(out.ok()) << out.status();
    copied[i] = std::move(*out);
  }
  std::vector<ForwardItem> items(choices.size());
  for (size_t i = 0; i < choices.size(); ++i) {
    items[i].tokens = choices[i];
    items[i].targets = targets[i];
    items[i].start = context.get();
    items[i].want_last_logprobs = true;
  }
  std::vector<ForwardOutput> forked(choices.size());
  ASSERT_TRUE(m.Forward(items, absl::MakeSpan(forked)).ok());
  for (size_t i = 0; i < choices.size(); ++i) {
    EXPECT_EQ(copied[i].logprob, forked[i].logprob) << "choice " << i;
    EXPECT_EQ(copied[i].argmax, forked[i].argmax) << "choice " << i;
    EXPECT_EQ(copied[i].last_logprobs, forked[i].last_logprobs) << "choice " << i;
  }
  EXPECT_EQ(context->position(), 70);
  auto again = context->Clone();
  auto after = RunOne(m, again.get(), choices[1], targets[1]);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->logprob, copied[1].logprob);
}

TEST_P(CudaReadOnlyStartTest, ForkLongerThanAPackEqualsACopy) {
  Model& m = *model_;
  const int64_t length = cuda::kPackRows + 70;
  if (m.info().max_context > 0 && m.info().max_context < 70 + length) {
    GTEST_SKIP() << "the golden model holds " << m.info().max_context << " positions";
  }
  auto context = Context();
  const std::vector<int32_t> tokens = RandomTokens(length), targets = RandomTokens(length);
  auto copy = context->Clone();
  ASSERT_NE(copy, nullptr);
  auto copied = RunOne(m, copy.get(), tokens, targets, /*want_last=*/true);
  ASSERT_TRUE(copied.ok()) << copied.status();
  ForwardItem item;
  item.tokens = tokens;
  item.targets = targets;
  item.start = context.get();
  item.want_last_logprobs = true;
  std::vector<ForwardOutput> forked(1);
  ASSERT_TRUE(m.Forward({&item, 1}, absl::MakeSpan(forked)).ok());
  EXPECT_EQ(copied->logprob, forked[0].logprob);
  EXPECT_EQ(copied->argmax, forked[0].argmax);
  EXPECT_EQ(copied->last_logprobs, forked[0].last_logprobs);
  EXPECT_EQ(context->position(), 70);
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, CudaReadOnlyStartTest, EveryFamilyAndDtype(),
                         FamilyDtypeName);

}  // namespace
}  // namespace hgeval::testing
