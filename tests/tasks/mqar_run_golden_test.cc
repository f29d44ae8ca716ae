// mqar end to end in process on the golden HGRN2 and LLaMA checkpoints (vocab 512, so the
// task runs with V = 512): the evaluator's per-setting and overall accuracy equal the
// accuracy recomputed here from the model's full logits, packing does not change them,
// and the standard V = 8192 task is refused with a clear error on a 512-token model.
// (These random-init models score 0: the argmax lists are what pin the scoring down.)
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"
#include "tasks/mqar/generator.h"
#include "tasks/mqar/mqar_task.h"
#include "tests/tasks/model_fixtures.h"

namespace hgeval::tasks::mqar {
namespace {

struct Recomputed {
  std::vector<int32_t> argmax;  // at the labelled positions
  double accuracy = 0;
};

// zoology's metric straight from the logits: argmax (lowest id on ties) at every labelled
// position of a fresh forward pass.
Recomputed Recompute(Model& model, const Doc& doc) {
  MqarDraw draw;
  draw.keys = doc["keys"].get<std::vector<int32_t>>();
  draw.values = doc["values"].get<std::vector<int32_t>>();
  draw.gaps = doc["gaps"].get<std::vector<int32_t>>();
  const MqarExample example = BuildMqarExample(doc["input_seq_len"].get<int64_t>(), draw);
  std::vector<int32_t> tokens(example.inputs.begin(), example.inputs.end());
  auto state = model.NewState();
  ForwardItem item;
  item.tokens = tokens;
  item.state = state.get();
  item.want_all_logits = true;
  std::vector<ForwardOutput> out(1);
  EXPECT_TRUE(model.Forward({&item, 1}, absl::MakeSpan(out)).ok());
  const int64_t vocab = model.info().vocab_size;
  Recomputed out_values;
  int correct = 0;
  int labelled = 0;
  for (size_t t = 0; t < tokens.size(); ++t) {
    if (example.labels[t] == kIgnoreLabel) continue;
    const float* row = out[0].logits.data() + t * vocab;
    int64_t best = 0;
    for (int64_t v = 1; v < vocab; ++v) {
      if (row[v] > row[best]) best = v;
    }
    out_values.argmax.push_back(static_cast<int32_t>(best));
    correct += best == example.labels[t];
    ++labelled;
  }
  out_values.accuracy = static_cast<double>(correct) / labelled;
  return out_values;
}

class MqarRunGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MqarRunGoldenTest, AccuracyEqualsRecomputationFromLogits) {
  auto loaded = hgeval::testing::LoadFixtureModel(GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto tokenizer = hgeval::testing::LoadTok512();
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();

  MqarTaskOptions options;
  options.settings = {{64, 4}, {128, 8}};
  options.vocab_size = 512;
  options.examples_per_setting = 5;
  const MqarTask task(options);
  EvaluatorOptions eval;
  eval.limit = 8;  // four examples of each setting
  eval.log_samples = true;

  std::vector<double> first_values;
  for (int64_t max_batch_tokens : {4096, 64}) {  // packed several per call / one per call
    EngineLanguageModelOptions lm_options;
    lm_options.max_batch_tokens = max_batch_tokens;
    EngineLanguageModel lm(loaded->model.get(), tokenizer->get(), lm_options);
    auto report = RunTask(lm, task, eval);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->n_effective, 8);
    EXPECT_EQ(report->stats.tokens_fed, 4 * 64 + 4 * 128);
    EXPECT_EQ(report->stats.tokens_scored, 4 * 4 + 4 * 8);

    std::map<std::string, std::vector<double>> expected;
    for (const auto& sample : report->samples) {
      const Doc& doc = sample["doc"];
      const Recomputed recomputed = Recompute(*loaded->model, doc);
      // resps[0] = [sum of log p(label), the argmax at each labelled position]
      EXPECT_EQ(sample["resps"][0][1].get<std::vector<int32_t>>(), recomputed.argmax);
      const double accuracy = recomputed.accuracy;
      expected["acc"].push_back(accuracy);
      expected[MqarSettingMetric(
                   {doc["input_seq_len"].get<int64_t>(), doc["num_kv_pairs"].get<int64_t>()})]
          .push_back(accuracy);
    }
    ASSERT_EQ(report->metrics.size(), 3u);
    for (size_t m = 0; m < report->metrics.size(); ++m) {
      const auto& values = expected[report->metrics[m].name];
      ASSERT_EQ(values.size(), m == 0 ? 8u : 4u) << report->metrics[m].name;
      double mean = 0;
      for (double v : values) mean += v;
      mean /= static_cast<double>(values.size());
      EXPECT_NEAR(report->values[m], mean, 1e-12) << report->metrics[m].name;
      EXPECT_GE(report->values[m], 0.0);
      EXPECT_LE(report->values[m], 1.0);
    }
    if (first_values.empty()) {
      first_values = report->values;
    } else {
      EXPECT_EQ(report->values, first_values);
    }
  }
}

TEST_P(MqarRunGoldenTest, CountOnlyCountsWithoutRunning) {
  auto loaded = hgeval::testing::LoadFixtureModel(GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto tokenizer = hgeval::testing::LoadTok512();
  ASSERT_TRUE(tokenizer.ok());
  EngineLanguageModelOptions lm_options;
  lm_options.count_only = true;
  EngineLanguageModel lm(loaded->model.get(), tokenizer->get(), lm_options);
  MqarTaskOptions options;
  options.settings = {{64, 4}, {128, 8}};
  options.vocab_size = 512;
  options.examples_per_setting = 3;
  auto report = RunTask(lm, MqarTask(options), {});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->stats.tokens_fed, 3 * 64 + 3 * 128);
  EXPECT_EQ(report->stats.tokens_scored, 3 * 4 + 3 * 8);
  EXPECT_EQ(report->values[0], 0.0);
}

TEST_P(MqarRunGoldenTest, StandardTaskNeedsAVocabularyOf8192) {
  auto loaded = hgeval::testing::LoadFixtureModel(GetParam());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto tokenizer = hgeval::testing::LoadTok512();
  ASSERT_TRUE(tokenizer.ok());
  EngineLanguageModel lm(loaded->model.get(), tokenizer->get(), {});
  EvaluatorOptions eval;
  eval.limit = 4;
  auto report = RunTasks(lm, {"mqar"}, eval);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find("vocabulary of 512"), std::string::npos)
      << report.status();
}

INSTANTIATE_TEST_SUITE_P(Models, MqarRunGoldenTest, ::testing::Values("hgrn2", "llama"));

}  // namespace
}  // namespace hgeval::tasks::mqar
