// SCROLLS end to end in process: contract_nli and qmsum on the shared data, on the bundled
// stories260K model (max_length 512 from its checkpoint) and the golden HGRN2 and LLaMA
// checkpoints (max_length 2048 / 1024, tok512), with every reported number recomputed here from
// the model's own answers; and the generation prompt truncation of a document far longer
// than max_length.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/multiple_choice.h"
#include "metrics/scrolls_metrics.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"
#include "tests/tasks/model_fixtures.h"

namespace hgeval::tasks {
namespace {

// Passes everything to the real model and keeps the tokens of every item it is fed.
class RecordingModel : public Model {
 public:
  explicit RecordingModel(Model* model) : model_(model) {}
  const ModelInfo& info() const override { return model_->info(); }
  const ModelConfig& config() const override { return model_->config(); }
  std::unique_ptr<SequenceState> NewState() const override { return model_->NewState(); }
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override {
    for (const ForwardItem& item : items) fed.emplace_back(item.tokens.begin(), item.tokens.end());
    return model_->Forward(items, outputs);
  }
  std::vector<std::vector<int32_t>> fed;

 private:
  Model* model_;
};

class ScrollsModelsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto model = hgeval::testing::LoadFixtureModel(GetParam());
    ASSERT_TRUE(model.ok()) << model.status();
    loaded_ = std::move(*model);
    auto tokenizer = hgeval::testing::LoadTok512();
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = std::move(*tokenizer);
    recording_ = std::make_unique<RecordingModel>(loaded_.model.get());
    EngineLanguageModelOptions options;
    options.model_name = GetParam();
    options.tokenizer_name = "tok512";
    lm_ = std::make_unique<EngineLanguageModel>(recording_.get(), tokenizer_.get(), options);
    options_.data_dir = hgeval::testing::SourcePath("data");
    options_.log_samples = true;
  }

  hgeval::testing::LoadedModel loaded_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<RecordingModel> recording_;
  std::unique_ptr<EngineLanguageModel> lm_;
  EvaluatorOptions options_;
};

TEST_P(ScrollsModelsTest, LongDocumentKeepsItsQuestionAndLosesItsStart) {
  auto task = CreateTask("scrolls_qmsum");
  ASSERT_TRUE(task.ok());
  auto docs = (*task)->LoadDocs(options_.data_dir);
  ASSERT_TRUE(docs.ok()) << docs.status();
  auto requests = (*task)->Requests((*docs)[0]);
  ASSERT_TRUE(requests.ok());
  const Request& request = (*requests)[0];
  const size_t max_length = static_cast<size_t>(lm_->max_length());
  // From the checkpoints: stories260K's seq_len, the golden configs'
  // max_position_embeddings.
  const std::map<std::string, size_t> expected = {
      {"stories260K", 512}, {"hgrn2", 2048}, {"llama", 1024}};
  ASSERT_EQ(max_length, expected.at(GetParam()));
  auto full = lm_->Encode(request.context);
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->size(), 4 * max_length);  // a whole meeting transcript

  recording_->fed.clear();
  auto result = lm_->GenerateUntil({{request.context, request.until, request.max_gen_toks}});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(recording_->fed.empty());
  // The prompt: exactly max_length - max_gen_toks tokens, the tail of the encoding.
  const std::vector<int32_t>& prompt = recording_->fed.front();
  const size_t budget = max_length - 256;
  ASSERT_EQ(prompt.size(), budget);
  EXPECT_EQ(prompt, std::vector<int32_t>(full->end() - budget, full->end()));
  auto prompt_text = tokenizer_->Decode(prompt, true);
  ASSERT_TRUE(prompt_text.ok());
  const std::string question =
      "\n\nQuestion: What were the main discussion points of the meeting?\nAnswer:";
  ASSERT_GE(prompt_text->size(), question.size());
  EXPECT_EQ(prompt_text->substr(prompt_text->size() - question.size()), question);
  EXPECT_EQ(prompt_text->find("Professor E: So . OK . Doesn't look like it crashed"),
            std::string::npos);
  // Every later feed is one generated token: prompt + generation stay within max_length.
  for (size_t i = 1; i < recording_->fed.size(); ++i) EXPECT_EQ(recording_->fed[i].size(), 1u);
  EXPECT_LE(prompt.size() + (*result)[0].n_tokens, max_length);
}

TEST_P(ScrollsModelsTest, ContractNliScoresEqualTheModelsOwnRanking) {
  options_.limit = GetParam() == "stories260K" ? 12 : 4;
  const int64_t n = static_cast<int64_t>(options_.limit);
  auto report = RunTasks(*lm_, {"scrolls_contractnli"}, options_);
  ASSERT_TRUE(report.ok()) << report.status();
  const TaskReport& task = report->tasks[0];
  EXPECT_EQ(task.n_original, 1037);
  EXPECT_EQ(task.n_effective, n);
  ASSERT_EQ(static_cast<int64_t>(task.samples.size()), n);

  // Recompute from loglikelihoods asked here, with the prompt written from the spec.
  const std::vector<std::string> choices = {"Not mentioned", "Entailment", "Contradiction"};
  double acc = 0, acc_norm = 0;
  for (const auto& sample : task.samples) {
    const std::string input = sample["doc"]["input"];
    const size_t blank = input.find("\n\n");
    const std::string context =
        input.substr(blank + 2) + "\n\nHypothesis: " + input.substr(0, blank) + "\nConclusion:";
    std::vector<LoglikelihoodRequest> requests;
    for (const auto& c : choices) requests.push_back({context, " " + c});
    auto lls = lm_->Loglikelihood(requests);
    ASSERT_TRUE(lls.ok());
    std::vector<double> values;
    for (size_t i = 0; i < 3; ++i) {
      values.push_back((*lls)[i].logprob);
      EXPECT_EQ(sample["resps"][i][0].get<double>(), (*lls)[i].logprob);  // bit-identical
    }
    const int64_t gold =
        std::find(choices.begin(), choices.end(), sample["doc"]["outputs"][0]) - choices.begin();
    acc += metrics::Acc(values, gold);
    acc_norm += metrics::AccNorm(values, choices, gold);
  }
  const nlohmann::json results = ResultsJson(*report)["results"]["scrolls_contractnli"];
  EXPECT_DOUBLE_EQ(results["acc,none"].get<double>(), acc / n);
  EXPECT_DOUBLE_EQ(results["acc_norm,none"].get<double>(), acc_norm / n);
  EXPECT_DOUBLE_EQ(results["em,none"].get<double>(), 100 * acc_norm / n);
  EXPECT_DOUBLE_EQ(results["scrolls_score,none"].get<double>(),
                   metrics::PythonRound(100 * acc_norm / n, 4));
  EXPECT_TRUE(results["em_stderr,none"].is_number());
}

TEST_P(ScrollsModelsTest, QmsumRougeIsComputedOverTheGeneratedSummaries) {
  options_.limit = 3;
  auto report = RunTasks(*lm_, {"scrolls_qmsum"}, options_);
  ASSERT_TRUE(report.ok()) << report.status();
  const TaskReport& task = report->tasks[0];
  EXPECT_EQ(task.n_original, 272);
  ASSERT_EQ(task.samples.size(), 3u);
  std::vector<std::string> predictions;
  std::vector<std::vector<std::string>> references;
  std::vector<GenerateUntilRequest> requests;
  for (const auto& sample : task.samples) {
    const std::string text = sample["resps"][0];
    EXPECT_EQ(text.find('\n'), std::string::npos);
    predictions.push_back(text);
    references.push_back(sample["doc"]["outputs"].get<std::vector<std::string>>());
    requests.push_back({sample["arguments"][0][0].get<std::string>(), {"\n"}, 256});
    EXPECT_EQ(sample["rouge1"][0], text);
  }
  // The same generations when asked directly (greedy decoding is deterministic).
  auto again = lm_->GenerateUntil(requests);
  ASSERT_TRUE(again.ok());
  for (size_t i = 0; i < predictions.size(); ++i) EXPECT_EQ((*again)[i].text, predictions[i]);

  const metrics::ScrollsRougeScores rouge = metrics::ScrollsRouge(predictions, references);
  const nlohmann::json results = ResultsJson(*report)["results"]["scrolls_qmsum"];
  EXPECT_EQ(results["rouge1,none"].get<double>(), rouge.rouge1);
  EXPECT_EQ(results["rouge2,none"].get<double>(), rouge.rouge2);
  EXPECT_EQ(results["rougeL,none"].get<double>(), rouge.rougeL);
  EXPECT_EQ(results["scrolls_score,none"].get<double>(), rouge.geometric_mean);
  EXPECT_EQ(results["rouge1_stderr,none"], "N/A");
}

INSTANTIATE_TEST_SUITE_P(Models, ScrollsModelsTest,
                         ::testing::Values("stories260K", "hgrn2", "llama"));

}  // namespace
}  // namespace hgeval::tasks
