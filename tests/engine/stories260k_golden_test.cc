// stories260K (Karpathy's llama2.c tiny model, real trained weights) loaded from the
// llama2.c files: 256 greedy steps from BOS reproduce llama2.c's own output word for word.
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

constexpr int32_t kBos = 1;

std::string ModelPath() { return testing::SourcePath("data/models/stories260K/stories260K.bin"); }
std::string TokenizerPath() { return testing::SourcePath("data/models/stories260K/tok512.bin"); }

// llama2.c's `run stories260K.bin -z tok512.bin -t 0.0` output, before its timing line.
std::string ExpectedText() {
  std::ifstream in(testing::SourcePath("data/models/stories260K/greedy_output_t0_n256.txt"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const size_t cut = text.find("achieved tok/s");
  EXPECT_NE(cut, std::string::npos);
  return text.substr(0, cut);
}

TEST(Stories260kGolden, ModelShape) {
  auto model = LoadModel(ModelPath(), LoadOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  const ModelConfig& c = (*model)->config();
  EXPECT_EQ(c.family, ModelFamily::kLlama);
  EXPECT_EQ(c.vocab_size, 512);
  EXPECT_EQ(c.hidden_size, 64);
  EXPECT_EQ(c.num_layers, 5);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ((*model)->info().max_context, 512);
}

// llama2.c: start from BOS, take the argmax 256 times, stop early if BOS comes out; print
// each piece (the first one without its leading space, as after BOS).
TEST(Stories260kGolden, GreedyFromBosReproducesLlama2c) {
  auto model = LoadModel(ModelPath(), LoadOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadTokenizer(TokenizerPath());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  GenerateRequest request;
  request.prompt = {kBos};
  request.max_new_tokens = 256;
  request.stop_tokens = {kBos};
  auto results = Generate(**model, tokenizer->get(), {&request, 1});
  ASSERT_TRUE(results.ok()) << results.status();
  const std::vector<int32_t>& tokens = (*results)[0].tokens;
  EXPECT_EQ(tokens.size(), 256u);
  std::vector<int32_t> with_bos = {kBos};
  with_bos.insert(with_bos.end(), tokens.begin(), tokens.end());
  auto text = (*tokenizer)->Decode(with_bos, /*skip_special=*/true);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, ExpectedText());
}

}  // namespace
}  // namespace hgeval
