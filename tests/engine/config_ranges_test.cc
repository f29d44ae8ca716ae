// Numeric config fields outside their range are refused by name when the config is
// parsed, before anything is allocated: a RoPE base that would make every logit NaN, a
// negative context length.
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"

namespace hgeval {
namespace {

void ExpectRefused(nlohmann::json config, const std::string& words) {
  auto parsed = ParseModelConfig(config);
  ASSERT_FALSE(parsed.ok()) << config.dump();
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(parsed.status().message()).find(words), std::string::npos)
      << parsed.status();
}

TEST(ConfigRangesTest, RopeThetaMustBePositive) {
  auto config = testing::ReadJsonFile(testing::SourcePath("tests/golden/llama/config.json"));
  ASSERT_TRUE(config.ok()) << config.status();
  for (double theta : {0.0, -10000.0}) {
    nlohmann::json c = *config;
    c["rope_theta"] = theta;  // transformers 5 writes it in rope_parameters too
    c["rope_parameters"]["rope_theta"] = theta;
    ExpectRefused(c, "'rope_theta' must be a positive number");
  }
  ASSERT_TRUE(ParseModelConfig(*config).ok());
}

TEST(ConfigRangesTest, MaxPositionEmbeddingsMustNotBeNegative) {
  for (const char* family : {"llama", "hgrn2"}) {
    auto config = testing::ReadJsonFile(
        testing::SourcePath(std::string("tests/golden/") + family + "/config.json"));
    ASSERT_TRUE(config.ok()) << config.status();
    (*config)["max_position_embeddings"] = -1;
    ExpectRefused(*config, "'max_position_embeddings' must be >= 0");
  }
}

// fla's HGRN2Config defaults expand_ratio to 128 and the layer lets it win over
// num_heads: only an explicit null takes the head count from num_heads.
TEST(ConfigRangesTest, Hgrn2ExpandRatioAbsentIs128AndWinsOverNumHeads) {
  auto config = testing::ReadJsonFile(testing::SourcePath("tests/golden/hgrn2/config.json"));
  ASSERT_TRUE(config.ok()) << config.status();
  nlohmann::json c = *config;
  c["hidden_size"] = 512;
  c["num_heads"] = 8;
  c.erase("expand_ratio");
  auto parsed = ParseModelConfig(c);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->expand_ratio, 128);
  EXPECT_EQ(parsed->num_heads, 4);
  c["expand_ratio"] = nullptr;
  parsed = ParseModelConfig(c);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->expand_ratio, 64);
  EXPECT_EQ(parsed->num_heads, 8);
}

// A config declaring more layers than the checkpoint holds is refused before a backend
// sizes anything from it: 10^8 layers used to allocate gigabytes (and end in bad_alloc).
TEST(ConfigRangesTest, MoreLayersThanTheWeightsIsRefusedBeforeAllocating) {
  for (const char* family : {"hgrn2", "llama", "mamba", "tnl"}) {
    const std::string golden = testing::SourcePath(std::string("tests/golden/") + family);
    auto config = testing::ReadJsonFile(golden + "/config.json");
    ASSERT_TRUE(config.ok()) << config.status();
    const std::string dir = testing::MakeTempDir(std::string("layers-") + family);
    std::filesystem::create_symlink(golden + "/model.safetensors", dir + "/model.safetensors");
    for (int64_t layers : {int64_t{100000000}, int64_t{4}}) {
      nlohmann::json c = *config;
      c[c.contains("decoder_layers") ? "decoder_layers" : "num_hidden_layers"] = layers;
      c.erase("linear_use_lrpe_list");  // TNL: its per-layer list would be refused first
      std::ofstream(dir + "/config.json") << c.dump();
      rusage before{};
      getrusage(RUSAGE_SELF, &before);
      auto model = LoadModel(dir, {});
      rusage after{};
      getrusage(RUSAGE_SELF, &after);
      ASSERT_FALSE(model.ok()) << family << " " << layers;
      EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument) << model.status();
      EXPECT_NE(std::string(model.status().message())
                    .find(absl::StrCat("declares ", layers,
                                       " layers but the checkpoint holds "
                                       "weights for ")),
                std::string::npos)
          << model.status();
      EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024) << "KiB of peak RSS";
    }
  }
}

}  // namespace
}  // namespace hgeval
