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

// Values upstream's TransnormerConfig / TransnormerModel accept and read in their own way
// (issue 28): each is read the same way here, not refused and not ignored.
TEST(TnlConfig, UpstreamSpellingsAreReadAsUpstream) {
  auto config = testing::ReadJsonFile(GoldenDir() + "/config.json");
  ASSERT_TRUE(config.ok()) << config.status();
  auto parse = [&](const char* key, nlohmann::json value) {
    nlohmann::json c = *config;
    c[key] = std::move(value);
    auto parsed = ParseModelConfig(c);
    EXPECT_TRUE(parsed.ok()) << key << ": " << parsed.status();
    return parsed.ok() ? *parsed : ModelConfig();
  };
  EXPECT_EQ(parse("glu_dim", -1).intermediate_size, 128);                 // -1: decoder_embed_dim
  EXPECT_EQ(parse("linear_act_fun", "swish").family, ModelFamily::kTnl);  // = silu
  EXPECT_TRUE(parse("bias", true).use_bias);  // every projection, qkvu and out too
  // A longer list: the first decoder_layers entries.
  EXPECT_EQ(parse("linear_use_lrpe_list", nlohmann::json::array({0, 1, 0, 1})).tnl_lrpe,
            (std::vector<bool>{false, true, false}));
  // An empty list: linear_use_lrpe for every layer.
  nlohmann::json every = *config;
  every["linear_use_lrpe_list"] = nlohmann::json::array();
  every["linear_use_lrpe"] = 1;
  auto all = ParseModelConfig(every);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->tnl_lrpe, (std::vector<bool>{true, true, true}));
  every["linear_use_lrpe"] = 0;
  EXPECT_TRUE(ParseModelConfig(every)->tnl_lrpe.empty() ||
              ParseModelConfig(every)->tnl_lrpe == (std::vector<bool>{false, false, false}));
  // Still refused by name: a GLU width of 0, an LRPE flag that is not 0/1.
  nlohmann::json bad = *config;
  bad["glu_dim"] = 0;
  auto zero = ParseModelConfig(bad);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(std::string(zero.status().message()).find("glu_dim"), std::string::npos);
  bad = every;
  bad["linear_use_lrpe"] = "yes";
  auto flag = ParseModelConfig(bad);
  ASSERT_FALSE(flag.ok());
  EXPECT_NE(std::string(flag.status().message()).find("linear_use_lrpe"), std::string::npos);
}

}  // namespace
}  // namespace hgeval
