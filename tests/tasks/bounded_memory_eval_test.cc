// lm-eval tasks under a memory bound (issue "Bounded memory", acceptance 4): the same
// tasks through the evaluator with a host budget and a state bound so small that the
// scorer walks each task in many waves and halves its batches give per-sample results
// bitwise equal to the unbounded run, for a KV-cache model and a recurrent one.
#include <memory>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/util/memory_budget.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"
#include "tests/support/paths.h"
#include "tests/support/scoped_budget_limit.h"
#include "tests/tasks/model_fixtures.h"

namespace hgeval::tasks {
namespace {

const std::vector<std::string> kTasks = {"piqa", "arc_easy", "hellaswag", "lambada_openai",
                                         "wikitext"};

// Every task's per-sample responses, as JSON text (doubles print round-trip exact).
absl::StatusOr<std::vector<std::string>> SampleResponses(Model& model, const Tokenizer& tokenizer,
                                                         size_t state_bytes) {
  EngineLanguageModelOptions options;
  options.bos_regime = BosRegime::kNone;
  options.max_length = 256;
  options.state_bytes = state_bytes;
  EngineLanguageModel lm(&model, &tokenizer, options);
  EvaluatorOptions eval;
  eval.limit = 12;
  eval.data_dir = hgeval::testing::SourcePath("data");
  eval.log_samples = true;
  absl::StatusOr<EvaluationReport> report = RunTasks(lm, kTasks, eval);
  if (!report.ok()) return report.status();
  std::vector<std::string> out;
  for (const TaskReport& task : report->tasks) {
    for (const nlohmann::json& sample : task.samples) {
      out.push_back(task.name + " " + sample.at("resps").dump());
    }
  }
  return out;
}

class BoundedMemoryEvalTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BoundedMemoryEvalTest, TinyHostBudgetGivesTheUnboundedSamples) {
  auto model = LoadModel(hgeval::testing::SourcePath("tests/golden/" + GetParam()), LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = hgeval::testing::LoadTok512();
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto expected = SampleResponses(**model, **tokenizer, /*state_bytes=*/0);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_GT(expected->size(), 50u);

  // Room for a handful of states of 256 positions beside the weights: far less than one
  // task's prefix states and batches.
  MemoryBudget* budget = (*model)->memory_budget();
  ASSERT_NE(budget, nullptr);
  absl::StatusOr<std::vector<std::string>> got;
  {
    hgeval::testing::ScopedBudgetLimit limit(budget,
                                             budget->held() + 8 * (*model)->StateBytes(256));
    got = SampleResponses(**model, **tokenizer, 3 * (*model)->StateBytes(256));
  }
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(expected->size(), got->size());
  for (size_t i = 0; i < got->size(); ++i) EXPECT_EQ((*expected)[i], (*got)[i]);
}

INSTANTIATE_TEST_SUITE_P(Models, BoundedMemoryEvalTest, ::testing::Values("llama", "hgrn2"));

}  // namespace
}  // namespace hgeval::tasks
