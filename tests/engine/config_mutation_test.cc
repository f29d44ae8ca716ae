// No crash from a checkpoint's config.json (issue 28): each golden model's config with
// random fields set to random values of any JSON type (negative, zero, huge, wrong type,
// null, missing) loads on the CPU either with an error status or as a model whose
// forward pass returns; never a crash, a hang or an abort. Deterministic (fixed seed).
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

constexpr int kMutantsPerFamily = 500;

nlohmann::json RandomValue(std::mt19937& rng) {
  static const std::vector<nlohmann::json> kValues = {-1,
                                                      0,
                                                      1,
                                                      2,
                                                      3,
                                                      7,
                                                      64,
                                                      (int64_t{1} << 20),
                                                      (int64_t{1} << 40),
                                                      -(int64_t{1} << 40),
                                                      0.5,
                                                      -0.5,
                                                      1e300,
                                                      true,
                                                      false,
                                                      "x",
                                                      "silu",
                                                      "layernorm",
                                                      nullptr,
                                                      nlohmann::json::array(),
                                                      nlohmann::json::array({1}),
                                                      nlohmann::json::array({1, 0, 1, 1}),
                                                      nlohmann::json::object()};
  return kValues[rng() % kValues.size()];
}

class ConfigMutationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ConfigMutationTest, LoadsOrIsRefusedNeverCrashes) {
  const std::string golden = testing::SourcePath("tests/golden/" + GetParam());
  nlohmann::json base;
  std::ifstream(golden + "/config.json") >> base;
  std::vector<std::string> keys;
  for (const auto& [key, value] : base.items()) keys.push_back(key);
  // Keys a family reads that its golden config may not spell out.
  for (const char* key :
       {"use_short_conv", "conv_size", "feature_map", "clamp_min", "num_kv_heads", "head_dim",
        "rope_scaling", "rope_parameters", "linear_use_lrpe", "time_step_rank", "intermediate_size",
        "tie_word_embeddings", "max_position_embeddings", "attn"}) {
    if (!base.contains(key)) keys.push_back(key);
  }
  std::mt19937 rng(28);
  int loaded = 0, refused = 0;
  for (int m = 0; m < kMutantsPerFamily; ++m) {
    nlohmann::json config = base;
    const int edits = 1 + static_cast<int>(rng() % 3);
    std::string what;
    for (int e = 0; e < edits; ++e) {
      const std::string& key = keys[rng() % keys.size()];
      if (rng() % 8 == 0) {
        config.erase(key);
        what += " -" + key;
      } else {
        config[key] = RandomValue(rng);
        what += " " + key + "=" + config[key].dump();
      }
    }
    const std::string dir = testing::MakeTempDir("config_mutation");
    std::ofstream(dir + "/config.json") << config.dump() << "\n";
    std::filesystem::create_symlink(golden + "/model.safetensors", dir + "/model.safetensors");
    SCOPED_TRACE(GetParam() + what);
    auto model = LoadModel(dir, LoadOptions());
    std::filesystem::remove_all(dir);
    if (!model.ok()) {
      EXPECT_FALSE(model.status().message().empty());
      ++refused;
      continue;
    }
    ++loaded;
    const int64_t vocab = (*model)->info().vocab_size;
    std::vector<int32_t> ids = {0, static_cast<int32_t>(vocab / 2),
                                static_cast<int32_t>(vocab - 1)};
    std::vector<int32_t> targets = {ids[1], ids[2], -1};
    auto state = (*model)->NewState();
    ForwardItem item;
    item.tokens = ids;
    item.targets = targets;
    item.state = state.get();
    std::vector<ForwardOutput> out(1);
    (void)(*model)->Forward({&item, 1}, absl::MakeSpan(out));  // an error is fine too
  }
  std::printf("[config_mutation] %s: %d loaded, %d refused\n", GetParam().c_str(), loaded, refused);
}

INSTANTIATE_TEST_SUITE_P(Families, ConfigMutationTest,
                         ::testing::Values("hgrn2", "hgrn", "gla", "llama", "mamba", "tnl"));

}  // namespace
}  // namespace hgeval
