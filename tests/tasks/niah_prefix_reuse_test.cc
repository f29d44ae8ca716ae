// Prefix reuse (haystack fed once, cells continued from snapshots) generates exactly what
// the naive per-cell run generates, on a 5 x 5 sweep of the golden HGRN2 and LLaMA models
// (vocabulary 512: the llama2.c tok512 tokenizer).
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tasks/niah/context.h"
#include "tasks/niah/haystack.h"
#include "tasks/niah/sweep.h"
#include "tests/support/paths.h"

namespace hgeval::niah {
namespace {

using hgeval::testing::SourcePath;

class NiahPrefixReuseTest : public ::testing::TestWithParam<const char*> {};

TEST_P(NiahPrefixReuseTest, SameTokensAndScoresAsNaive) {
  LoadOptions load;
  load.threads = 2;
  auto model = LoadModel(SourcePath(std::string("tests/golden/") + GetParam()), load);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  ASSERT_EQ((*tokenizer)->vocab_size(), (*model)->info().vocab_size);

  NiahOptions options;
  options.mode = NiahMode::kEasy;
  options.grid = NiahGrid{{330, 390, 450, 510, 570}, {0, 25, 50, 75, 100}};
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  options.max_new_tokens = 12;
  options.stop_strings = {};  // random weights: keep every cell at full length
  options.ignore_eos = true;
  options.prefix_reuse = true;
  options.max_batch = 3;  // several haystack segments, snapshots shared across lengths
  auto reuse = RunNiahSweep(**model, **tokenizer, options);
  ASSERT_TRUE(reuse.ok()) << reuse.status();
  options.prefix_reuse = false;
  options.max_batch = 5;
  auto naive = RunNiahSweep(**model, **tokenizer, options);
  ASSERT_TRUE(naive.ok()) << naive.status();

  ASSERT_EQ(reuse->cells.size(), 25u);
  ASSERT_EQ(naive->cells.size(), 25u);
  int64_t prompt_sum = 0;
  for (size_t i = 0; i < 25; ++i) {
    const NiahCellResult& a = reuse->cells[i];
    const NiahCellResult& b = naive->cells[i];
    SCOPED_TRACE(::testing::Message() << "L=" << a.layout.length << " D=" << a.layout.depth);
    ASSERT_TRUE(a.ran && b.ran);
    EXPECT_EQ(a.generated_tokens.size(), 12u);
    EXPECT_EQ(a.generated_tokens, b.generated_tokens);
    EXPECT_EQ(a.generated, b.generated);
    EXPECT_EQ(a.score, b.score);
    EXPECT_EQ(a.success, b.success);
    EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
    prompt_sum += a.prompt_tokens;
  }
  EXPECT_EQ(reuse->grid.scores, naive->grid.scores);
  EXPECT_EQ(reuse->metrics.niah_score, naive->metrics.niah_score);

  // Tokens fed: naive feeds every prompt; reuse feeds the deepest prefix once plus every
  // cell's rest. Decoding feeds 11 of the 12 tokens of each cell either way.
  EXPECT_EQ(naive->stats.prefill_tokens_fed, prompt_sum);
  EXPECT_EQ(naive->stats.naive_prefill_tokens, prompt_sum);
  const int64_t bos = (*tokenizer)->adds_bos() ? 1 : 0;
  int64_t max_prefix = 0, rest_sum = 0;
  for (const NiahCellResult& c : reuse->cells) {
    max_prefix = std::max<int64_t>(max_prefix, bos + c.layout.insertion_point);
    rest_sum += c.prompt_tokens - bos - c.layout.insertion_point;
  }
  EXPECT_EQ(reuse->stats.prefill_tokens_fed, max_prefix + rest_sum);
  EXPECT_LT(reuse->stats.prefill_tokens_fed, naive->stats.prefill_tokens_fed);
  EXPECT_EQ(reuse->stats.decode_tokens_fed, 25 * 11);
  EXPECT_EQ(naive->stats.decode_tokens_fed, 25 * 11);
  EXPECT_GT(reuse->stats.snapshots, 0);
  EXPECT_EQ(naive->stats.snapshots, 0);
}

// With a one-token needle, no suffix and deep insertion points, the tokens fed after the
// snapshot are few, so the generated tokens depend on the snapshot itself (a recurrent
// model forgets a wrong prefix within a few hundred tokens; here there are not many).
TEST_P(NiahPrefixReuseTest, ShortContinuationsFromSnapshotsMatchNaive) {
  LoadOptions load;
  load.threads = 2;
  auto model = LoadModel(SourcePath(std::string("tests/golden/") + GetParam()), load);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();

  NiahOptions options;
  options.grid = NiahGrid{{260, 300, 340, 380, 420}, {96, 97, 98, 99, 100}};
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  NiahTexts texts = DefaultNiahTexts(NiahMode::kStandard);
  texts.needle = "X";
  texts.prompt_suffix = "";
  options.texts = texts;
  options.max_new_tokens = 6;
  options.stop_strings = {};
  options.ignore_eos = true;
  options.max_batch = 4;
  auto reuse = RunNiahSweep(**model, **tokenizer, options);
  ASSERT_TRUE(reuse.ok()) << reuse.status();
  options.prefix_reuse = false;
  auto naive = RunNiahSweep(**model, **tokenizer, options);
  ASSERT_TRUE(naive.ok()) << naive.status();
  std::set<std::vector<int32_t>> distinct;
  for (size_t i = 0; i < reuse->cells.size(); ++i) {
    SCOPED_TRACE(::testing::Message()
                 << "L=" << reuse->cells[i].layout.length << " D=" << reuse->cells[i].layout.depth);
    EXPECT_EQ(reuse->cells[i].generated_tokens, naive->cells[i].generated_tokens);
    distinct.insert(naive->cells[i].generated_tokens);
  }
  // The continuations differ between cells: the test would see a wrong snapshot.
  EXPECT_GE(distinct.size(), 10u);
}

INSTANTIATE_TEST_SUITE_P(GoldenModels, NiahPrefixReuseTest, ::testing::Values("hgrn2", "llama"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// A resumed sweep skips finished cells, reports each cell it runs, and the merged result
// equals an uninterrupted sweep.
TEST(NiahSweepTest, ResumeSkipsFinishedCellsAndMergesToTheSameGrid) {
  LoadOptions load;
  load.threads = 2;
  auto model = LoadModel(SourcePath("tests/golden/hgrn2"), load);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  NiahOptions options;
  options.grid = NiahGrid{{330, 400}, {0, 50, 100}};
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  options.max_new_tokens = 4;
  auto full = RunNiahSweep(**model, **tokenizer, options);
  ASSERT_TRUE(full.ok()) << full.status();

  options.skip_cells = {0, 4};
  std::vector<int64_t> reported;
  auto resumed = RunNiahSweep(**model, **tokenizer, options, {},
                              [&](int64_t index, const NiahCellResult& cell) {
                                EXPECT_TRUE(cell.ran);
                                reported.push_back(index);
                              });
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  std::sort(reported.begin(), reported.end());
  EXPECT_EQ(reported, (std::vector<int64_t>{1, 2, 3, 5}));
  EXPECT_FALSE(resumed->cells[0].ran);
  EXPECT_TRUE(std::isnan(resumed->grid.scores[0][0]));
  EXPECT_EQ(resumed->stats.cells_run, 4);
  resumed->cells[0] = full->cells[0];
  resumed->cells[4] = full->cells[4];
  ASSERT_TRUE(RecomputeNiahGrid(*resumed).ok());
  EXPECT_EQ(resumed->grid.scores, full->grid.scores);
  EXPECT_EQ(resumed->metrics.niah_score, full->metrics.niah_score);
  for (size_t i = 0; i < full->cells.size(); ++i) {
    EXPECT_EQ(resumed->cells[i].generated_tokens, full->cells[i].generated_tokens) << i;
  }
}

TEST(NiahSweepTest, PromptsLongerThanTheModelsContextFailBeforeRunning) {
  auto model = LoadModel(SourcePath("tests/golden/llama"), LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ((*model)->info().max_context, 1024);
  auto tokenizer = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  NiahOptions options;
  options.grid = NiahGrid{{400, 1200}, {50}};
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  int64_t cells_reported = 0;
  auto result = RunNiahSweep(**model, **tokenizer, options, {},
                             [&](int64_t, const NiahCellResult&) { ++cells_reported; });
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("maximum context of 1024"), std::string::npos)
      << result.status();
  EXPECT_EQ(cells_reported, 0);
}

TEST(NiahSweepTest, MaxCellsSpreadsOverTheGrid) {
  EXPECT_EQ(SelectNiahCells(5, 0), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(SelectNiahCells(5, 9), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(SelectNiahCells(1225, 3), (std::vector<int64_t>{0, 612, 1224}));
  EXPECT_EQ(SelectNiahCells(10, 1), (std::vector<int64_t>{0}));
}

}  // namespace
}  // namespace hgeval::niah
