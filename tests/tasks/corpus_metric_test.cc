// A task whose metric is computed over the whole corpus (Aggregation::kCorpus): the
// evaluator hands every evaluated doc's (prediction, references) item to the task, in
// doc order, reports its number with stderr "N/A" and logs the items per sample.
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tasks/api/task.h"
#include "tasks/harness/evaluator.h"

namespace hgeval::tasks {
namespace {

// Generates "answer <i>" for the doc whose context is "question <i>".
class EchoModel : public LanguageModel {
 public:
  absl::StatusOr<std::vector<LoglikelihoodResult>> Loglikelihood(
      absl::Span<const LoglikelihoodRequest> requests, const CallOptions&) override {
    return std::vector<LoglikelihoodResult>(requests.size());
  }
  absl::StatusOr<std::vector<RollingResult>> LoglikelihoodRolling(
      absl::Span<const RollingRequest> requests, const CallOptions&) override {
    return std::vector<RollingResult>(requests.size());
  }
  absl::StatusOr<std::vector<GenerateUntilResult>> GenerateUntil(
      absl::Span<const GenerateUntilRequest> requests, const CallOptions&) override {
    std::vector<GenerateUntilResult> out;
    for (const auto& r : requests) {
      out.push_back({"answer " + r.context.substr(r.context.find(' ') + 1), 2});
    }
    return out;
  }
  LanguageModelInfo info() const override { return {}; }
};

// Corpus metric "joined": the predictions joined with "|" must arrive in doc order; its
// value is the number of (prediction, first reference) pairs that agree, x10.
class CorpusTask : public Task {
 public:
  std::string name() const override { return "corpus_fake"; }
  double version() const override { return 1; }
  RequestType output_type() const override { return RequestType::kGenerateUntil; }
  nlohmann::json config() const override { return nlohmann::json::object(); }
  std::vector<MetricSpec> metrics() const override {
    return {{"agree", Aggregation::kCorpus, true}, {"per_doc", Aggregation::kMean, true}};
  }
  absl::StatusOr<std::vector<Doc>> LoadDocs(const std::string&) const override {
    std::vector<Doc> docs;
    for (int i = 0; i < 5; ++i) {
      docs.push_back({{"i", i}, {"refs", {absl::StrCat("answer ", i % 2 == 0 ? i : 99), "x"}}});
    }
    return docs;
  }
  absl::StatusOr<std::vector<Request>> Requests(const Doc& doc) const override {
    Request r;
    r.type = RequestType::kGenerateUntil;
    r.context = absl::StrCat("question ", doc["i"].get<int>());
    r.until = {"\n"};
    return std::vector<Request>{r};
  }
  absl::StatusOr<DocMetrics> Process(const Doc& doc,
                                     absl::Span<const Response> responses) const override {
    MetricSample item;
    item.prediction = responses[0].text;
    item.references = doc["refs"].get<std::vector<std::string>>();
    return DocMetrics{{"agree", item}, {"per_doc", MetricSample{1.0}}};
  }
  absl::StatusOr<double> AggregateCorpus(const std::string& metric,
                                         absl::Span<const MetricSample> samples) const override {
    if (fail) return absl::InternalError("corpus metric failed");
    std::vector<std::string> predictions;
    double agree = 0;
    for (const MetricSample& s : samples) {
      predictions.push_back(s.prediction);
      if (s.prediction == s.references[0]) agree += 1;
    }
    seen = absl::StrJoin(predictions, "|");
    return 10 * agree;
  }

  bool fail = false;
  mutable std::string seen;
};

TEST(CorpusMetricTest, TaskAggregatesEveryDocInOrder) {
  EchoModel model;
  CorpusTask task;
  EvaluatorOptions options;
  options.log_samples = true;
  auto report = RunTask(model, task, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(task.seen, "answer 0|answer 1|answer 2|answer 3|answer 4");
  ASSERT_EQ(report->metrics.size(), 2u);
  // Docs 0, 2, 4 agree with their first reference.
  EXPECT_DOUBLE_EQ(report->values[0], 30.0);
  EXPECT_TRUE(std::isnan(report->stderrs[0]));
  EXPECT_DOUBLE_EQ(report->values[1], 1.0);  // the mean metric is unaffected
  ASSERT_EQ(report->samples.size(), 5u);
  EXPECT_EQ(report->samples[1]["agree"],
            nlohmann::json::parse(R"(["answer 1", ["answer 99", "x"]])"));

  EvaluationReport whole;
  whole.tasks.push_back(*report);
  const nlohmann::json results = ResultsJson(whole);
  EXPECT_EQ(results["results"]["corpus_fake"]["agree,none"], 30.0);
  EXPECT_EQ(results["results"]["corpus_fake"]["agree_stderr,none"], "N/A");
}

TEST(CorpusMetricTest, LimitShrinksTheCorpus) {
  EchoModel model;
  CorpusTask task;
  EvaluatorOptions options;
  options.limit = 2;
  auto report = RunTask(model, task, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(task.seen, "answer 0|answer 1");
  EXPECT_DOUBLE_EQ(report->values[0], 10.0);
}

TEST(CorpusMetricTest, AggregationErrorStopsTheTask) {
  EchoModel model;
  CorpusTask task;
  task.fail = true;
  auto report = RunTask(model, task, EvaluatorOptions{});
  EXPECT_EQ(report.status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace hgeval::tasks
