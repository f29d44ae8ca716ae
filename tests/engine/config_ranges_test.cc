// Numeric config fields outside their range are refused by name when the config is
// parsed, before anything is allocated: a RoPE base that would make every logit NaN, a
// negative context length.
#include <string>

#include "engine/model/config.h"
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

}  // namespace
}  // namespace hgeval
