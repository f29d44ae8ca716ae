// EngineLanguageModel's lm-eval request semantics on a real tokenizer (stories260K's
// tok512) and the golden HGRN2 model (vocab 512): trailing-space move, joint
// tokenization, BOS regimes, the empty-context prefix token, left truncation, rolling
// windows, windowless rolling, greedy generation.
#include "tasks/models/engine_language_model.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/tasks/model_fixtures.h"

namespace hgeval::tasks {
namespace {

class EngineLanguageModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = hgeval::testing::LoadFixtureModel("hgrn2");
    ASSERT_TRUE(model.ok()) << model.status();
    loaded_ = std::move(*model);
    auto tokenizer = hgeval::testing::LoadTok512();
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = std::move(*tokenizer);
  }

  EngineLanguageModel Make(BosRegime regime, int64_t max_length = 0, bool reuse = true) {
    EngineLanguageModelOptions options;
    options.bos_regime = regime;
    options.max_length = max_length;
    options.context_reuse = reuse;
    return EngineLanguageModel(loaded_.model.get(), tokenizer_.get(), options);
  }

  // Reference: feed context ++ continuation[:-1] from an empty state in one Forward.
  std::pair<double, bool> ScoreFromScratch(const std::vector<int32_t>& context,
                                           const std::vector<int32_t>& continuation) {
    std::vector<int32_t> fed = context;
    fed.insert(fed.end(), continuation.begin(), continuation.end() - 1);
    std::vector<int32_t> targets(fed.size(), -1);
    std::copy(continuation.begin(), continuation.end(), targets.end() - continuation.size());
    auto state = loaded_.model->NewState();
    ForwardItem item;
    item.tokens = fed;
    item.targets = targets;
    item.state = state.get();
    std::vector<ForwardOutput> out(1);
    EXPECT_TRUE(loaded_.model->Forward({&item, 1}, absl::MakeSpan(out)).ok());
    double sum = 0;
    bool greedy = true;
    for (size_t p = fed.size() - continuation.size(); p < fed.size(); ++p) {
      sum += out[0].logprob[p];
      greedy = greedy && out[0].is_greedy[p];
    }
    return {sum, greedy};
  }

  hgeval::testing::LoadedModel loaded_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(EngineLanguageModelTest, MaxLengthAndPrefixDefaults) {
  auto lm = Make(BosRegime::kNone);
  EXPECT_EQ(lm.max_length(), 2048);  // config max_position_embeddings
  EXPECT_EQ(lm.prefix_token_id(), tokenizer_->bos_id());
  EXPECT_EQ(Make(BosRegime::kNone, 100).max_length(), 100);
  EXPECT_EQ(lm.info().bos_regime, "none");
  EXPECT_EQ(Make(BosRegime::kTokenizer).info().bos_regime, "tokenizer");
}

TEST_F(EngineLanguageModelTest, TrailingSpaceMovesToTheContinuation) {
  auto lm = Make(BosRegime::kNone);
  auto a = lm.Tokenize({"Once upon a time, ", "Lily"});
  auto b = lm.Tokenize({"Once upon a time,", " Lily"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->context, b->context);
  EXPECT_EQ(a->continuation, b->continuation);
  auto ctx = tokenizer_->Encode("Once upon a time,", false);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ(a->context, *ctx);
}

TEST_F(EngineLanguageModelTest, ContinuationIsTheTailOfTheJointEncoding) {
  auto lm = Make(BosRegime::kNone);
  const std::string context = "The cat sat on the", continuation = " mat.";
  auto t = lm.Tokenize({context, continuation});
  ASSERT_TRUE(t.ok());
  auto whole = tokenizer_->Encode(context + continuation, false);
  auto ctx = tokenizer_->Encode(context, false);
  ASSERT_TRUE(whole.ok() && ctx.ok());
  EXPECT_EQ(t->context, *ctx);
  EXPECT_EQ(t->continuation, std::vector<int32_t>(whole->begin() + ctx->size(), whole->end()));
}

TEST_F(EngineLanguageModelTest, BosRegimes) {
  auto none = Make(BosRegime::kNone).Tokenize({"Hello there", " friend"});
  auto with_bos = Make(BosRegime::kTokenizer).Tokenize({"Hello there", " friend"});
  ASSERT_TRUE(none.ok() && with_bos.ok());
  EXPECT_NE(none->context.front(), tokenizer_->bos_id());
  ASSERT_TRUE(tokenizer_->adds_bos());
  EXPECT_EQ(with_bos->context.front(), tokenizer_->bos_id());
  EXPECT_EQ(std::vector<int32_t>(with_bos->context.begin() + 1, with_bos->context.end()),
            none->context);
  EXPECT_EQ(with_bos->continuation, none->continuation);
}

TEST_F(EngineLanguageModelTest, EmptyContextUsesThePrefixToken) {
  auto t = Make(BosRegime::kNone).Tokenize({"", " Once upon a time"});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->context, std::vector<int32_t>{tokenizer_->bos_id()});
  auto cont = tokenizer_->Encode(" Once upon a time", false);
  ASSERT_TRUE(cont.ok());
  EXPECT_EQ(t->continuation, *cont);
}

TEST_F(EngineLanguageModelTest, LeftTruncationKeepsMaxLengthPlusOneTokens) {
  auto lm = Make(BosRegime::kNone, 8);
  const std::string context = "One day a little girl named Lily went to the park with her mom";
  auto t = lm.Tokenize({context, " and dad"});
  ASSERT_TRUE(t.ok());
  auto full = Make(BosRegime::kNone).Tokenize({context, " and dad"});
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->context.size() + full->continuation.size(), 9u);
  EXPECT_EQ(t->context.size() + t->continuation.size(), 9u);
  EXPECT_EQ(t->continuation, full->continuation);
  EXPECT_TRUE(std::equal(t->context.rbegin(), t->context.rend(), full->context.rbegin()));
  // A continuation longer than max_length is refused (lm-eval asserts).
  auto too_long = Make(BosRegime::kNone, 2).Tokenize({"Hi", " one two three four five"});
  EXPECT_FALSE(too_long.ok());
}

TEST_F(EngineLanguageModelTest, LoglikelihoodMatchesADirectForwardPass) {
  for (bool reuse : {true, false}) {
    auto lm = Make(BosRegime::kTokenizer, 0, reuse);
    std::vector<LoglikelihoodRequest> requests = {
        {"Once upon a time, there was a", " little girl"},
        {"Once upon a time, there was a", " big dog"},
        {"Once upon a time, there was a", " little girl"},  // duplicate
        {"Tom had a red ball.", " He liked it."},
        {"", " Lily"}};
    auto results = lm.Loglikelihood(requests);
    ASSERT_TRUE(results.ok()) << results.status();
    for (size_t i = 0; i < requests.size(); ++i) {
      auto t = lm.Tokenize(requests[i]);
      ASSERT_TRUE(t.ok());
      auto [ll, greedy] = ScoreFromScratch(t->context, t->continuation);
      EXPECT_NEAR((*results)[i].logprob, ll, 1e-5) << i;
      EXPECT_EQ((*results)[i].is_greedy, greedy) << i;
      EXPECT_EQ((*results)[i].n_tokens, static_cast<int64_t>(t->continuation.size()));
      EXPECT_LT((*results)[i].logprob, 0.0);
    }
    EXPECT_EQ((*results)[0].logprob, (*results)[2].logprob);
  }
}

TEST_F(EngineLanguageModelTest, RollingSumsLmEvalWindows) {
  const std::string text =
      "Lily and Ben went to the park. They played on the swings and ate ice cream.";
  auto lm = Make(BosRegime::kNone, 6);
  auto tokens = tokenizer_->Encode(text, false);
  ASSERT_TRUE(tokens.ok());
  ASSERT_GT(tokens->size(), 12u);
  auto results = lm.LoglikelihoodRolling({{text}});
  ASSERT_TRUE(results.ok()) << results.status();
  double expected = 0;
  for (const auto& w : lm_eval::MakeRollingWindows(*tokens, tokenizer_->bos_id(), 6)) {
    expected += ScoreFromScratch(w.context, w.continuation).first;
  }
  EXPECT_NEAR((*results)[0].logprob, expected, 1e-5);
  EXPECT_EQ((*results)[0].n_tokens, static_cast<int64_t>(tokens->size()));

  // One window covering the text == windowless rolling (state carried through).
  auto one_window = Make(BosRegime::kNone).LoglikelihoodRolling({{text}});
  EngineLanguageModelOptions options;
  options.bos_regime = BosRegime::kNone;
  options.max_length = 6;
  options.windowless_rolling = true;
  EngineLanguageModel windowless(loaded_.model.get(), tokenizer_.get(), options);
  auto carried = windowless.LoglikelihoodRolling({{text}});
  ASSERT_TRUE(one_window.ok() && carried.ok());
  EXPECT_NEAR((*one_window)[0].logprob, (*carried)[0].logprob, 1e-5);
  EXPECT_NE((*one_window)[0].logprob, (*results)[0].logprob);
  EXPECT_EQ(windowless.info().rolling_mode, "windowless");
  // The same per request, on a model that otherwise uses windows.
  auto per_request = lm.LoglikelihoodRolling({{text, /*windowless=*/true}});
  ASSERT_TRUE(per_request.ok());
  EXPECT_EQ((*per_request)[0].logprob, (*carried)[0].logprob);
}

TEST_F(EngineLanguageModelTest, GenerateUntilIsGreedyAndCutsAtTheStop) {
  auto lm = Make(BosRegime::kTokenizer);
  auto results = lm.GenerateUntil({{"Once upon a time", {"\n"}, 12}});
  ASSERT_TRUE(results.ok()) << results.status();
  const auto& r = (*results)[0];
  EXPECT_LE(r.n_tokens, 12);
  EXPECT_EQ(r.text.find('\n'), std::string::npos);
  // The first generated token is the argmax after the prompt.
  auto prompt = lm.Encode("Once upon a time");
  ASSERT_TRUE(prompt.ok());
  auto state = loaded_.model->NewState();
  ForwardItem item;
  item.tokens = *prompt;
  item.state = state.get();
  item.want_last_logprobs = true;
  std::vector<ForwardOutput> out(1);
  ASSERT_TRUE(loaded_.model->Forward({&item, 1}, absl::MakeSpan(out)).ok());
  int32_t best = 0;
  for (size_t v = 1; v < out[0].last_logprobs.size(); ++v) {
    if (out[0].last_logprobs[v] > out[0].last_logprobs[best]) best = static_cast<int32_t>(v);
  }
  if (best != tokenizer_->eos_id()) {
    auto piece = tokenizer_->Decode(std::vector<int32_t>{best}, true);
    ASSERT_TRUE(piece.ok());
    const std::string first = *piece;
    if (first.find('\n') == std::string::npos) {
      EXPECT_EQ(r.text.substr(0, first.size()), first);
    }
  }
}

}  // namespace
}  // namespace hgeval::tasks
