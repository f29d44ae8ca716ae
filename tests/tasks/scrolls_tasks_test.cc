// The seven SCROLLS tasks on small fixtures in SCROLLS' record form: lm-eval's prompts
// and requests (spec §7.2), and their scores through the evaluator with a scripted model
// (spec §7.3-7.4). Expected numbers are worked out by hand in the comments.
#include <cmath>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/api/registry.h"
#include "tasks/api/task.h"
#include "tasks/harness/evaluator.h"
#include "tests/support/paths.h"

namespace hgeval::tasks {
namespace {

std::string Record(const std::string& id, const std::string& input, const std::string& output) {
  return nlohmann::json({{"id", id}, {"pid", id + "_0"}, {"input", input}, {"output", output}})
             .dump() +
         "\n";
}

// A data folder with one validation.jsonl per SCROLLS subset.
std::string WriteFixtures() {
  const std::string root = hgeval::testing::MakeTempDir("scrolls_fixtures");
  const std::map<std::string, std::string> files = {
      {"gov_report", Record("g1", "Report one.", "Summary one.") +
                         Record("g2", "Report two.", "Sum two a.") +
                         Record("g2", "Report two.", "Sum two b.")},
      {"summ_screen_fd", Record("s1", "JOHN: Hi.\nMARY: Bye.", "They part.")},
      {"qmsum", Record("q1", "What did they decide?\n\nA: hi\nB: we decide X", "They decided X.")},
      {"narrative_qa", Record("n1", "Who is Bob?\n\nBob is a cat.", "A cat") +
                           Record("n1", "Who is Bob?\n\nBob is a cat.", "a small cat") +
                           Record("n2", "Where?\n\nIn Paris.", "Paris")},
      {"qasper", Record("p1", "Is it new?\n\nPaper one.", "Yes") +
                     Record("p1", "Is it new?\n\nPaper one.", "yes.") +
                     Record("p2", "Is it old?\n\nPaper two.", "No") +
                     Record("p3", "Which model?\n\nPaper three.", "BERT model") +
                     Record("p4", "Which data?\n\nPaper four.", "Unanswerable")},
      {"quality",
       Record("u1",
              "What color is the sky?\n\n(A) Red (B) Blue\n(C) Green  (D) Black and white\n\n"
              "The sky is blue today.",
              "Blue")},
      {"contract_nli", Record("c1", "Hyp one.\n\nContract one.", "Entailment") +
                           Record("c2", "Hyp two.\n\nContract two.", "Contradiction")},
  };
  for (const auto& [subset, text] : files) {
    const std::string folder = root + "/scrolls/" + subset;
    EXPECT_EQ(system(("mkdir -p " + folder).c_str()), 0);
    std::ofstream(folder + "/validation.jsonl", std::ios::binary) << text;
  }
  return root;
}

// Answers from scripts keyed by context (generation) or context + "|" + continuation.
class ScriptedModel : public LanguageModel {
 public:
  std::map<std::string, std::string> generations;
  std::map<std::string, std::pair<double, bool>> loglikelihoods;
  std::vector<GenerateUntilRequest> generate_requests;

  absl::StatusOr<std::vector<LoglikelihoodResult>> Loglikelihood(
      absl::Span<const LoglikelihoodRequest> requests, const CallOptions&) override {
    std::vector<LoglikelihoodResult> out;
    for (const auto& r : requests) {
      auto it = loglikelihoods.find(r.context + "|" + r.continuation);
      if (it == loglikelihoods.end()) {
        return absl::NotFoundError("unscripted: " + r.context + "|" + r.continuation);
      }
      out.push_back({it->second.first, it->second.second, 1});
    }
    return out;
  }
  absl::StatusOr<std::vector<RollingResult>> LoglikelihoodRolling(absl::Span<const RollingRequest>,
                                                                  const CallOptions&) override {
    return absl::UnimplementedError("rolling");
  }
  absl::StatusOr<std::vector<GenerateUntilResult>> GenerateUntil(
      absl::Span<const GenerateUntilRequest> requests, const CallOptions&) override {
    std::vector<GenerateUntilResult> out;
    for (const auto& r : requests) {
      generate_requests.push_back(r);
      auto it = generations.find(r.context);
      if (it == generations.end()) return absl::NotFoundError("unscripted: " + r.context);
      out.push_back({it->second, 1});
    }
    return out;
  }
  LanguageModelInfo info() const override { return {}; }
};

constexpr char kSummaryQuestion[] =
    "\n\nQuestion: What is a summary of the preceding text?\nAnswer:";

ScriptedModel MakeScript() {
  ScriptedModel m;
  m.generations = {
      {std::string("Report one.") + kSummaryQuestion, "summary one"},
      {std::string("Report two.") + kSummaryQuestion, "sum two c"},
      {std::string("JOHN: Hi.\nMARY: Bye.") + kSummaryQuestion, "They part."},
      {"A: hi\nB: we decide X\n\nQuestion: What did they decide?\nAnswer:", " they decided x"},
      {"Bob is a cat.\n\nQuestion: Who is Bob?\nAnswer:", " the cat"},
      {"In Paris.\n\nQuestion: Where?\nAnswer:", " London"},
      {"Paper three.\n\nQuestion: Which model?\nAnswer:", "  "},
      {"Paper four.\n\nQuestion: Which data?\nAnswer:", ""},
  };
  const std::string p1 = "Paper one.\n\nQuestion: Is it new?\nAnswer:";
  const std::string p2 = "Paper two.\n\nQuestion: Is it old?\nAnswer:";
  const std::string u1 = "The sky is blue today.\n\nQuestion: What color is the sky?\nAnswer:";
  const std::string c1 = "Contract one.\n\nHypothesis: Hyp one.\nConclusion:";
  const std::string c2 = "Contract two.\n\nHypothesis: Hyp two.\nConclusion:";
  m.loglikelihoods = {
      {p1 + "| yes", {-1, false}},
      {p1 + "| no", {-2, false}},
      // Equal loglikelihoods: the greedy flag decides, as lm-eval's tuple comparison.
      {p2 + "| yes", {-1, true}},
      {p2 + "| no", {-1, false}},
      {u1 + "| Red", {-4, false}},
      {u1 + "| Blue", {-3, false}},
      {u1 + "| Green", {-5, false}},
      {u1 + "| Black and white", {-6, false}},
      {c1 + "| Not mentioned", {-10, false}},
      {c1 + "| Entailment", {-2, false}},
      {c1 + "| Contradiction", {-3, false}},
      {c2 + "| Not mentioned", {-1, false}},
      {c2 + "| Entailment", {-5, false}},
      {c2 + "| Contradiction", {-2, false}},
  };
  return m;
}

// metric name -> value of one task's report.
std::map<std::string, double> Values(const TaskReport& report) {
  std::map<std::string, double> out;
  for (size_t m = 0; m < report.metrics.size(); ++m) out[report.metrics[m].name] = report.values[m];
  return out;
}

class ScrollsTasksTest : public ::testing::Test {
 protected:
  void SetUp() override { options_.data_dir = WriteFixtures(); }

  TaskReport Run(const std::string& name) {
    auto task = CreateTask(name);
    EXPECT_TRUE(task.ok()) << task.status();
    auto report = RunTask(model_, **task, options_);
    EXPECT_TRUE(report.ok()) << report.status();
    return report.ok() ? *report : TaskReport{};
  }

  EvaluatorOptions options_;
  ScriptedModel model_ = MakeScript();
};

TEST_F(ScrollsTasksTest, GroupExpandsToTheSevenTasks) {
  auto names = ExpandTaskList("scrolls");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(*names,
            (std::vector<std::string>{"scrolls_govreport", "scrolls_summscreenfd", "scrolls_qmsum",
                                      "scrolls_qasper", "scrolls_narrativeqa", "scrolls_quality",
                                      "scrolls_contractnli"}));
}

TEST_F(ScrollsTasksTest, SummaryRequestsAndCorpusRouge) {
  const TaskReport report = Run("scrolls_govreport");
  EXPECT_EQ(report.n_original, 2);  // g2's two records are one doc
  ASSERT_EQ(model_.generate_requests.size(), 2u);
  EXPECT_EQ(model_.generate_requests[0].context, std::string("Report one.") + kSummaryQuestion);
  EXPECT_EQ(model_.generate_requests[0].until, std::vector<std::string>{"\n"});
  EXPECT_EQ(model_.generate_requests[0].max_gen_toks, 256);
  // g1: "summary one" = "Summary one." -> 100 for R1, R2, RL.
  // g2: "sum two c" vs "sum two a" / "sum two b" (the same either way): R1 2/3 -> 66.67,
  // R2 one bigram of 2 -> 50, RL LCS 2 of 3 -> 66.67. Means: 83.3333, 75, 83.3333.
  // Official score (83.333.. * 75 * 83.333..)^(1/3) = 80.4574.
  const auto v = Values(report);
  EXPECT_DOUBLE_EQ(v.at("rouge1"), 83.3333);
  EXPECT_DOUBLE_EQ(v.at("rouge2"), 75.0);
  EXPECT_DOUBLE_EQ(v.at("rougeL"), 83.3333);
  EXPECT_DOUBLE_EQ(v.at("scrolls_score"), 80.4574);
  EXPECT_TRUE(std::isnan(report.stderrs[0]));  // "N/A", as lm-eval's custom aggregation
}

TEST_F(ScrollsTasksTest, QmsumPromptPutsTheQuestionAfterTheTranscript) {
  const TaskReport report = Run("scrolls_qmsum");
  ASSERT_EQ(model_.generate_requests.size(), 1u);
  EXPECT_EQ(model_.generate_requests[0].context,
            "A: hi\nB: we decide X\n\nQuestion: What did they decide?\nAnswer:");
  const auto v = Values(report);
  EXPECT_DOUBLE_EQ(v.at("rouge1"), 100.0);
  EXPECT_DOUBLE_EQ(v.at("scrolls_score"), 100.0);
}

TEST_F(ScrollsTasksTest, NarrativeQaF1TakesTheBestReference) {
  options_.log_samples = true;
  const TaskReport report = Run("scrolls_narrativeqa");
  // n1: " the cat" -> "cat" = "A cat" -> F1 1. n2: "London" vs "Paris" -> 0. 100 * 1/2.
  const auto v = Values(report);
  EXPECT_DOUBLE_EQ(v.at("f1"), 50.0);
  EXPECT_DOUBLE_EQ(v.at("scrolls_score"), 50.0);
  ASSERT_EQ(report.samples.size(), 2u);
  EXPECT_EQ(report.samples[0]["f1"],
            nlohmann::json::parse(R"([" the cat", ["A cat", "a small cat"]])"));
  EXPECT_EQ(report.samples[0]["target"], " A cat, a small cat");
}

TEST_F(ScrollsTasksTest, QasperYesNoByLoglikelihoodOtherwiseGenerated) {
  const TaskReport report = Run("scrolls_qasper");
  // p1 (references Yes / yes.): ll(" yes") -1 > ll(" no") -2 -> " yes": F1 1.
  // p2 (No): equal ll, " yes" greedy -> " yes": F1 0.
  // p3: "  " strips to nothing -> "Unanswerable" vs "BERT model": 0.
  // p4: "" -> "Unanswerable" = reference: 1. Mean 100 * 2/4 = 50.
  EXPECT_EQ(report.n_requests, 2 + 2 + 1 + 1);
  ASSERT_EQ(model_.generate_requests.size(), 2u);
  EXPECT_DOUBLE_EQ(Values(report).at("f1"), 50.0);
}

TEST_F(ScrollsTasksTest, QualityRanksTheExtractedChoices) {
  options_.log_samples = true;
  const TaskReport report = Run("scrolls_quality");
  ASSERT_EQ(report.samples.size(), 1u);
  const auto& arguments = report.samples[0]["arguments"];
  ASSERT_EQ(arguments.size(), 4u);
  EXPECT_EQ(arguments[0][0], "The sky is blue today.\n\nQuestion: What color is the sky?\nAnswer:");
  EXPECT_EQ(arguments[3][1], " Black and white");
  // lls -4, -3, -5, -6: argmax 1 = gold -> acc 1. Per character: -4/3, -3/4, -5/5, -6/15:
  // argmax 3 -> acc_norm 0, em 0.
  const auto v = Values(report);
  EXPECT_DOUBLE_EQ(v.at("acc"), 1.0);
  EXPECT_DOUBLE_EQ(v.at("acc_norm"), 0.0);
  EXPECT_DOUBLE_EQ(v.at("em"), 0.0);
  EXPECT_DOUBLE_EQ(v.at("scrolls_score"), 0.0);
}

TEST_F(ScrollsTasksTest, ContractNliEmIsHundredTimesAccNorm) {
  const TaskReport report = Run("scrolls_contractnli");
  // c1 (gold Entailment = 1): lls -10, -2, -3 -> acc 1; per character -10/13, -2/10,
  // -3/13 -> index 1 -> acc_norm 1. c2 (gold Contradiction = 2): lls -1, -5, -2 -> acc 0;
  // -1/13, -5/10, -2/13 -> index 0 -> acc_norm 0. Means 0.5, 0.5, em 50.
  const auto v = Values(report);
  EXPECT_DOUBLE_EQ(v.at("acc"), 0.5);
  EXPECT_DOUBLE_EQ(v.at("acc_norm"), 0.5);
  EXPECT_DOUBLE_EQ(v.at("em"), 50.0);
  EXPECT_DOUBLE_EQ(v.at("scrolls_score"), 50.0);
  // em's stderr is the mean stderr over {100, 0}: sqrt(5000 / 1) / sqrt(2) = 50.
  EXPECT_DOUBLE_EQ(report.stderrs[2], 50.0);
}

TEST_F(ScrollsTasksTest, GroupReportsTheOfficialAverage) {
  auto names = ExpandTaskList("scrolls");
  ASSERT_TRUE(names.ok());
  auto report = RunTasks(model_, *names, options_);
  ASSERT_TRUE(report.ok()) << report.status();
  const nlohmann::json results = ResultsJson(*report);
  // govreport 80.4574, summscreenfd 100 (identical), qmsum 100, qasper 50,
  // narrativeqa 50, quality 0, contractnli 50: mean 430.4574 / 7.
  EXPECT_NEAR(results["groups"]["scrolls"]["scrolls_score,none"].get<double>(), 430.4574 / 7, 1e-9);
  EXPECT_EQ(results["groups"]["scrolls"]["scrolls_score_stderr,none"], "N/A");
  EXPECT_EQ(results["group_subtasks"]["scrolls"].size(), 7u);
  EXPECT_EQ(results["results"]["scrolls_qasper"]["f1_stderr,none"], "N/A");
  EXPECT_EQ(results["versions"]["scrolls_qmsum"], 2);
  const std::string table = ResultsTable(results);
  EXPECT_NE(table.find("|scrolls"), std::string::npos);
  EXPECT_NE(table.find("|Groups"), std::string::npos);
  // Without all seven members there is no group score.
  auto partial = RunTasks(model_, {"scrolls_qmsum"}, options_);
  ASSERT_TRUE(partial.ok());
  EXPECT_FALSE(ResultsJson(*partial).contains("groups"));
}

}  // namespace
}  // namespace hgeval::tasks
