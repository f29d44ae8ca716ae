// The one generation stop rule (engine/runtime/stop_tokens.h): the tokenizer's EOS, the
// model config's EOS when it differs, and BOS for llama2.c tokenizers only.
#include "engine/runtime/stop_tokens.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

TEST(GenerationStopTokensTest, Llama2cStopsAtEosAndAtTheBosThatEndsASample) {
  auto tokenizer = LoadTokenizer(testing::SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ(GenerationStopTokens(**tokenizer), (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(GenerationStopTokens(**tokenizer, 2), (std::vector<int32_t>{2, 1}));
}

TEST(GenerationStopTokensTest, OtherTokenizersStopAtTheirEosAndTheConfigsEos) {
  auto tokenizer = LoadTokenizer(testing::SourcePath("data/tokenizers/llama-2/tokenizer.model"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_EQ(GenerationStopTokens(**tokenizer), (std::vector<int32_t>{2}));
  EXPECT_EQ(GenerationStopTokens(**tokenizer, 2), (std::vector<int32_t>{2}));
  EXPECT_EQ(GenerationStopTokens(**tokenizer, 7), (std::vector<int32_t>{2, 7}));
}

}  // namespace
}  // namespace hgeval
