// TNL (TransNormerLLM, model_type transnormer) against the reference logits of
// tests/golden/tnl (computed in float64 from the upstream definition: LRPE on layer 0,
// ALiBi-style decays per layer, weightless SimpleRMSNorm, GLU without activation), forks
// equal to scratch runs across contexts of 1 to 300 tokens, and the configs the forward
// pass does not cover refused by name.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/config.h"
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"

namespace hgeval {
namespace {

using testing::GoldenExpectations;
using testing::MaxAbsDiff;

constexpr float kLogitTolerance = 1e-4f;
constexpr double kTailTolerance = 1e-3;

std::string GoldenDir() { return testing::SourcePath("tests/golden/tnl"); }

std::unique_ptr<Model> Load() {
  auto model = LoadModel(GoldenDir(), LoadOptions());
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

TEST(TnlGolden, Fp32MatchesReference) {
  auto model = Load();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->info().family, ModelFamily::kTnl);
  EXPECT_EQ(model->info().max_context, 0);  // recurrent: unbounded
  auto golden = testing::ReadGoldenExpectations(GoldenDir());
  ASSERT_TRUE(golden.ok()) << golden.status();
  ASSERT_EQ(golden->cases.size(), 5u);
  for (const auto& c : golden->cases) {
    auto run = testing::RunCase(*model, c.ids);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_LE(MaxAbsDiff(run->logits, c.logits), kLogitTolerance) << "T=" << c.ids.size();
    EXPECT_NEAR(run->tail_logprob, c.tail_logprob, kTailTolerance) << "T=" << c.ids.size();
  }
  auto greedy = testing::GreedyTokens(*model, golden->greedy_prompt, 16);
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(*greedy, golden->greedy_output);
}

// A fork (state after a context, then the continuation) equals the whole sequence from
// scratch: positions (LRPE) continue from the state, not from zero.
TEST(TnlGolden, ForksEqualScratchRuns) {
  auto model = Load();
  ASSERT_NE(model, nullptr);
  std::mt19937 rng(3);
  for (int context : {1, 63, 64, 65, 255, 256, 257, 300}) {
    std::vector<int32_t> ids(context + 20);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % 512);
    std::vector<int32_t> targets(ids.size(), -1);
    for (size_t t = context; t + 1 < ids.size(); ++t) targets[t] = ids[t + 1];
    auto whole_state = model->NewState();
    ForwardItem whole;
    whole.tokens = ids;
    whole.targets = targets;
    whole.state = whole_state.get();
    ForwardOutput a;
    ASSERT_TRUE(model->Forward({&whole, 1}, absl::MakeSpan(&a, 1)).ok());
    auto fork_state = model->NewState();
    ForwardItem prefix;
    prefix.tokens = absl::MakeConstSpan(ids).subspan(0, context);
    prefix.state = fork_state.get();
    ForwardOutput ignored;
    ASSERT_TRUE(model->Forward({&prefix, 1}, absl::MakeSpan(&ignored, 1)).ok());
    ForwardItem rest;
    rest.tokens = absl::MakeConstSpan(ids).subspan(context);
    rest.targets = absl::MakeConstSpan(targets).subspan(context);
    rest.state = fork_state.get();
    ForwardOutput b;
    ASSERT_TRUE(model->Forward({&rest, 1}, absl::MakeSpan(&b, 1)).ok());
    for (size_t t = 0; t + 1 < rest.tokens.size(); ++t) {
      EXPECT_NEAR(a.logprob[context + t], b.logprob[t], 1e-5) << "context " << context;
    }
  }
}

TEST(TnlConfig, UnsupportedShapesAreRefusedByName) {
  auto config = testing::ReadJsonFile(GoldenDir() + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  auto refused = [&](const char* key, nlohmann::json value, const char* words) {
    nlohmann::json c = *config;
    c[key] = std::move(value);
    auto parsed = ParseModelConfig(c);
    ASSERT_FALSE(parsed.ok()) << key;
    EXPECT_NE(std::string(parsed.status().message()).find(words), std::string::npos)
        << parsed.status();
  };
  refused("hidden_dim", 256, "hidden_dim");
  refused("decoder_layers", 1, "decoder_layers >= 2");
  refused("norm_type", "layernorm", "norm_type");
  refused("linear_act_fun", "relu", "linear_act_fun");
  refused("linear_use_lrpe_list", nlohmann::json::array({1, 0}), "linear_use_lrpe_list");
  auto ok = ParseModelConfig(*config);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->hidden_size, 128);
  EXPECT_EQ(ok->num_heads, 4);
  EXPECT_EQ(ok->intermediate_size, 352);
  EXPECT_FALSE(ok->tie_word_embeddings);
  nlohmann::json untied = *config;
  untied.erase("tie_word_embeddings");
  EXPECT_TRUE(ParseModelConfig(untied)->tie_word_embeddings);  // absent means tied
}

}  // namespace
}  // namespace hgeval
