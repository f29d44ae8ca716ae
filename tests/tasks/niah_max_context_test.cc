// A NIAH sweep longer than a LLaMA's training length (max_position_embeddings 1024 for the
// golden LLaMA) is refused before anything runs, and runs when the model is loaded with a
// longer LoadOptions::max_context (RoPE extrapolation, as the Scaling-Laws heatmaps do).
#include <memory>
#include <string>

#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tasks/niah/context.h"
#include "tasks/niah/sweep.h"
#include "tests/support/paths.h"

namespace hgeval::niah {
namespace {

using hgeval::testing::SourcePath;

NiahOptions PastTrainingLengthSweep() {
  NiahOptions options;
  options.mode = NiahMode::kEasy;
  options.grid = NiahGrid{{1100, 1400}, {0, 50, 100}};  // every prompt > 1024 tokens
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  options.max_new_tokens = 6;
  options.stop_strings = {};  // random weights: keep every cell at full length
  options.ignore_eos = true;
  options.max_batch = 3;
  return options;
}

absl::StatusOr<std::unique_ptr<Model>> LoadGoldenLlama(int64_t max_context) {
  LoadOptions load;
  load.threads = 2;
  load.max_context = max_context;
  return LoadModel(SourcePath("tests/golden/llama"), load);
}

class NiahMaxContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tokenizer = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = std::move(*tokenizer);
  }
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(NiahMaxContextTest, RefusedAtTheTrainingLength) {
  auto model = LoadGoldenLlama(0);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->config().max_position_embeddings, 1024);
  auto result = RunNiahSweep(**model, *tokenizer_, PastTrainingLengthSweep());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << result.status();
  EXPECT_NE(result.status().message().find("maximum context of 1024"), std::string::npos)
      << result.status();
}

TEST_F(NiahMaxContextTest, RunsPastTheTrainingLengthWithTheOverride) {
  auto model = LoadGoldenLlama(2048);
  ASSERT_TRUE(model.ok()) << model.status();
  for (bool prefix_reuse : {true, false}) {
    SCOPED_TRACE(prefix_reuse ? "prefix reuse" : "naive");
    NiahOptions options = PastTrainingLengthSweep();
    options.prefix_reuse = prefix_reuse;
    auto result = RunNiahSweep(**model, *tokenizer_, options);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->cells.size(), 6u);
    for (const NiahCellResult& cell : result->cells) {
      SCOPED_TRACE(::testing::Message() << "L=" << cell.layout.length);
      EXPECT_TRUE(cell.ran);
      EXPECT_GT(cell.prompt_tokens, 1024);
      EXPECT_EQ(cell.generated_tokens.size(), 6u);
    }
    EXPECT_EQ(result->stats.cells_run, 6);
  }
}

}  // namespace
}  // namespace hgeval::niah
