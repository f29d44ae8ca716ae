// hgeval-eval --tasks mqar on a checkpoint without a tokenizer (as MQAR-trained ones are):
// the standard task runs, its results carry the per-setting table and equal the
// in-process evaluator's; a text task on the same checkpoint fails saying why.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "engine/model/load_model.h"
#include "engine/tokenizer/token_only_tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"
#include "tests/support/paths.h"
#include "tests/support/shell_command.h"
#include "tests/tasks/mqar_test_model.h"

namespace hgeval::tasks {
namespace {

std::string Tool() { return std::string(HGEVAL_BINARY_DIR) + "/tasks/tools/hgeval-eval"; }

TEST(MqarEvalCliTest, RunsTheStandardTaskWithoutATokenizer) {
  const std::string dir = hgeval::testing::MakeTempDir("mqar-eval-cli");
  ASSERT_TRUE(hgeval::testing::WriteMqarVocabLlama(dir).ok());
  const std::string output = dir + "/results.json";
  std::string table;
  ASSERT_EQ(hgeval::testing::RunShell(Tool() + " --model " + dir +
                                          " --tasks mqar --limit 8 --noprogress --output " + output,
                                      &table),
            0)
      << table;
  EXPECT_NE(table.find("acc_L512_K64"), std::string::npos) << table;
  std::ifstream in(output);
  const nlohmann::json cli = nlohmann::json::parse(in);
  EXPECT_EQ(cli["config"]["tokenizer"], "none");
  EXPECT_EQ(cli["n-samples"]["mqar"]["effective"], 8);

  auto model = LoadModel(dir, LoadOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = MakeTokenOnlyTokenizer(hgeval::testing::kMqarVocab);
  EngineLanguageModel lm(model->get(), tokenizer.get(), {});
  EvaluatorOptions options;
  options.limit = 8;
  auto report = RunTasks(lm, {"mqar"}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(cli["results"]["mqar"], ResultsJson(*report)["results"]["mqar"]);

  std::string out;
  EXPECT_EQ(hgeval::testing::RunShell(
                Tool() + " --model " + dir + " --tasks piqa --limit 2 --noprogress 2>&1", &out),
            1);
  EXPECT_EQ(hgeval::testing::RunShell(
                Tool() + " --model " + dir + " --tokenizer none --tasks piqa --limit 2 " +
                    "--noprogress --data_dir " + hgeval::testing::SourcePath("data") + " 2>&1",
                &out),
            1);
  EXPECT_NE(out.find("no tokenizer"), std::string::npos) << out;
}

}  // namespace
}  // namespace hgeval::tasks
