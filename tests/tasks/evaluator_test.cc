// RunTasks on a real model (golden HGRN2 + tok512): lm-eval's results layout, the
// aggregation of per-doc scores (recomputed here from the model's own log-likelihoods),
// --limit, the markdown table and the per-sample records.
#include "tasks/harness/evaluator.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/text_counts.h"
#include "tasks/api/registry.h"
#include "tasks/models/engine_language_model.h"
#include "tests/tasks/model_fixtures.h"

namespace hgeval::tasks {
namespace {

class EvaluatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = hgeval::testing::LoadFixtureModel("hgrn2");
    ASSERT_TRUE(model.ok()) << model.status();
    loaded_ = std::move(*model);
    auto tokenizer = hgeval::testing::LoadTok512();
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = std::move(*tokenizer);
    EngineLanguageModelOptions options;
    options.bos_regime = BosRegime::kNone;
    options.max_length = 256;
    options.model_name = "tests/golden/hgrn2";
    options.tokenizer_name = "tok512";
    lm_ = std::make_unique<EngineLanguageModel>(loaded_.model.get(), tokenizer_.get(), options);
  }

  hgeval::testing::LoadedModel loaded_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<EngineLanguageModel> lm_;
};

TEST_F(EvaluatorTest, EffectiveDocCountFollowsLmEvalLimit) {
  EXPECT_EQ(EffectiveDocCount(100, 0), 100);
  EXPECT_EQ(EffectiveDocCount(100, 7), 7);
  EXPECT_EQ(EffectiveDocCount(100, 500), 100);
  EXPECT_EQ(EffectiveDocCount(101, 0.5), 51);  // ceil
}

TEST_F(EvaluatorTest, MultipleChoiceResultsMatchRecomputedScores) {
  EvaluatorOptions options;
  options.limit = 6;
  options.data_dir = hgeval::testing::SourcePath("data");
  options.log_samples = true;
  int64_t last_done = -1;
  options.progress = [&last_done](const std::string& task, int64_t done, int64_t total) {
    EXPECT_EQ(task, "piqa");
    EXPECT_EQ(total, 12);
    last_done = done;
  };
  auto report = RunTasks(*lm_, {"piqa"}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(last_done, 12);

  // Recompute acc / acc_norm from the model's log-likelihoods.
  auto task = CreateTask("piqa");
  ASSERT_TRUE(task.ok());
  auto docs = (*task)->LoadDocs(options.data_dir);
  ASSERT_TRUE(docs.ok());
  double acc = 0, acc_norm = 0;
  for (int d = 0; d < 6; ++d) {
    const Doc& doc = (*docs)[d];
    std::vector<LoglikelihoodRequest> requests;
    for (const char* key : {"sol1", "sol2"}) {
      requests.push_back({"Question: " + doc["goal"].get<std::string>() + "\nAnswer:",
                          " " + doc[key].get<std::string>()});
    }
    auto lls = lm_->Loglikelihood(requests);
    ASSERT_TRUE(lls.ok());
    const int gold = doc["label"].get<int>();
    const int pick = (*lls)[1].logprob > (*lls)[0].logprob ? 1 : 0;
    const double n0 = (*lls)[0].logprob / doc["sol1"].get<std::string>().size();
    const double n1 = (*lls)[1].logprob / doc["sol2"].get<std::string>().size();
    acc += pick == gold;
    acc_norm += (n1 > n0 ? 1 : 0) == gold;
  }
  acc /= 6;
  acc_norm /= 6;

  const nlohmann::json results = ResultsJson(*report);
  const auto& piqa = results["results"]["piqa"];
  EXPECT_EQ(piqa["alias"], "piqa");
  EXPECT_DOUBLE_EQ(piqa["acc,none"].get<double>(), acc);
  EXPECT_DOUBLE_EQ(piqa["acc_norm,none"].get<double>(), acc_norm);
  if (acc > 0 && acc < 1) {
    EXPECT_NEAR(piqa["acc_stderr,none"].get<double>(), std::sqrt(acc * (1 - acc) / 5), 1e-12);
  }
  EXPECT_EQ(results["versions"]["piqa"], 1.0);
  EXPECT_EQ(results["n-shot"]["piqa"], 0);
  EXPECT_EQ(results["n-samples"]["piqa"]["original"], 1838);
  EXPECT_EQ(results["n-samples"]["piqa"]["effective"], 6);
  EXPECT_EQ(results["higher_is_better"]["piqa"]["acc"], true);
  EXPECT_EQ(results["config"]["bos_regime"], "none");
  EXPECT_EQ(results["config"]["max_length"], 256);
  EXPECT_EQ(results["config"]["model"], "tests/golden/hgrn2");
  EXPECT_EQ(results["config"]["limit"], 6.0);
  EXPECT_EQ(results["config"]["backend"], "cpu");
  EXPECT_EQ(results["config"]["dtype"], "fp32");
  EXPECT_EQ(results["configs"]["piqa"]["doc_to_text"], "Question: {{goal}}\nAnswer:");
  EXPECT_GT(results["hgeval"]["tasks"]["piqa"]["tokens_fed"].get<int64_t>(), 0);

  const std::string table = ResultsTable(results);
  EXPECT_NE(table.find("|Tasks|Version|Filter|n-shot| Metric |   |Value |   |Stderr|"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("|piqa |      1|none  |     0|acc     |\xE2\x86\x91  |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("|     |       |none  |     0|acc_norm|\xE2\x86\x91  |"), std::string::npos)
      << table;

  const nlohmann::json samples = SamplesByTask(*report);
  ASSERT_EQ(samples.size(), 1u);
  ASSERT_EQ(samples["piqa"].size(), 6u);
  const nlohmann::json& first = samples["piqa"][0];
  EXPECT_EQ(first["doc_id"], 0);
  EXPECT_EQ(first["task"], "piqa");
  EXPECT_EQ(first["arguments"].size(), 2u);
  EXPECT_EQ(first["arguments"][0][0],
            "Question: " + (*docs)[0]["goal"].get<std::string>() + "\nAnswer:");
  EXPECT_EQ(first["target"], (*docs)[0]["label"]);
}

TEST_F(EvaluatorTest, PerplexityAggregations) {
  EvaluatorOptions options;
  options.limit = 2;
  options.data_dir = hgeval::testing::SourcePath("data");
  options.bootstrap_iters = 1000;
  auto report = RunTasks(*lm_, {"lambada_openai", "wikitext"}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json results = ResultsJson(*report);

  // lambada: perplexity = exp(-mean(doc ll)), acc = mean(is_greedy).
  auto lambada = CreateTask("lambada_openai");
  auto docs = (*lambada)->LoadDocs(options.data_dir);
  ASSERT_TRUE(docs.ok());
  double ll_sum = 0, greedy = 0;
  for (int d = 0; d < 2; ++d) {
    auto requests = (*lambada)->Requests((*docs)[d]);
    auto r = lm_->Loglikelihood({{(*requests)[0].context, (*requests)[0].continuation}});
    ASSERT_TRUE(r.ok());
    ll_sum += (*r)[0].logprob;
    greedy += (*r)[0].is_greedy;
  }
  EXPECT_NEAR(results["results"]["lambada_openai"]["perplexity,none"].get<double>(),
              std::exp(-ll_sum / 2), 1e-9 * std::exp(-ll_sum / 2));
  EXPECT_DOUBLE_EQ(results["results"]["lambada_openai"]["acc,none"].get<double>(), greedy / 2);
  EXPECT_TRUE(results["results"]["lambada_openai"]["perplexity_stderr,none"].is_number());
  EXPECT_EQ(results["higher_is_better"]["lambada_openai"]["perplexity"], false);

  // wikitext: word/byte perplexity from the rolling ll and the ORIGINAL page's counts.
  auto wikitext = CreateTask("wikitext");
  auto pages = (*wikitext)->LoadDocs(options.data_dir);
  ASSERT_TRUE(pages.ok());
  double total_ll = 0, words = 0, bytes = 0;
  for (int d = 0; d < 2; ++d) {
    auto requests = (*wikitext)->Requests((*pages)[d]);
    auto r = lm_->LoglikelihoodRolling({{(*requests)[0].context}});
    ASSERT_TRUE(r.ok());
    total_ll += (*r)[0].logprob;
    const std::string page = (*pages)[d]["page"];
    words += metrics::PythonWhitespaceSplitCount(page);
    bytes += page.size();
  }
  const auto& wt = results["results"]["wikitext"];
  EXPECT_NEAR(wt["word_perplexity,none"].get<double>(), std::exp(-total_ll / words),
              1e-9 * std::exp(-total_ll / words));
  EXPECT_NEAR(wt["byte_perplexity,none"].get<double>(), std::exp(-total_ll / bytes), 1e-9);
  EXPECT_NEAR(wt["bits_per_byte,none"].get<double>(), -total_ll / bytes / std::log(2.0), 1e-9);
  EXPECT_EQ(wt["word_perplexity_stderr,none"], "N/A");
  EXPECT_EQ(wt["bits_per_byte_stderr,none"], "N/A");
  EXPECT_EQ(results["versions"]["wikitext"], 2.0);
  EXPECT_EQ(results["n-samples"]["wikitext"]["original"], 62);
  const std::string table = ResultsTable(results);
  EXPECT_NE(table.find("   N/A|"), std::string::npos) << table;
}

TEST_F(EvaluatorTest, UnknownTaskIsNotFound) {
  auto report = RunTasks(*lm_, {"no_such_task"}, {});
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hgeval::tasks
