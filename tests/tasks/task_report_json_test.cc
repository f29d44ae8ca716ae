// A TaskReport written by one process and read by another (a job's shards) comes back
// bit-identical: values, NaN "N/A" stderrs, the version, configs, samples and stats.
#include "tasks/harness/task_report_json.h"

#include <bit>
#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace hgeval::tasks {
namespace {

TaskReport Sample() {
  TaskReport r;
  r.name = "piqa";
  r.version = 1.0;
  r.n_original = 1838;
  r.n_effective = 100;
  r.n_requests = 200;
  r.metrics = {{"acc", Aggregation::kMean, true}, {"perplexity", Aggregation::kPerplexity, false}};
  // 0.1 + 0.2 is not 0.3: a decimal round trip through text could lose the last bit.
  r.values = {0.1 + 0.2, 12345.678901234567};
  r.stderrs = {std::nextafter(0.05, 1.0), std::numeric_limits<double>::quiet_NaN()};
  r.config = {{"dataset_path", "piqa"}, {"output_type", "multiple_choice"}};
  r.samples = {{{"doc_id", 0}, {"acc", 1.0}}};
  r.stats.requests = 200;
  r.stats.tokens_fed = 9876;
  r.stats.tokens_scored = 543;
  r.stats.truncated_requests = 2;
  r.seconds = 1.25;
  return r;
}

TEST(TaskReportJsonTest, RoundTripIsBitExact) {
  const TaskReport in = Sample();
  // Through text, as the store keeps it.
  const nlohmann::json json = nlohmann::json::parse(TaskReportToJson(in).dump());
  absl::StatusOr<TaskReport> out = TaskReportFromJson(json);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->name, in.name);
  EXPECT_EQ(std::bit_cast<uint64_t>(out->version), std::bit_cast<uint64_t>(in.version));
  EXPECT_EQ(out->n_original, in.n_original);
  EXPECT_EQ(out->n_effective, in.n_effective);
  EXPECT_EQ(out->n_requests, in.n_requests);
  ASSERT_EQ(out->metrics.size(), 2u);
  EXPECT_EQ(out->metrics[1].name, "perplexity");
  EXPECT_EQ(out->metrics[1].aggregation, Aggregation::kPerplexity);
  EXPECT_FALSE(out->metrics[1].higher_is_better);
  for (size_t i = 0; i < in.values.size(); ++i) {
    EXPECT_EQ(std::bit_cast<uint64_t>(out->values[i]), std::bit_cast<uint64_t>(in.values[i]));
    EXPECT_EQ(std::bit_cast<uint64_t>(out->stderrs[i]), std::bit_cast<uint64_t>(in.stderrs[i]));
  }
  EXPECT_TRUE(std::isnan(out->stderrs[1]));
  EXPECT_EQ(out->config, in.config);
  EXPECT_EQ(out->samples, in.samples);
  EXPECT_EQ(out->stats.tokens_fed, 9876);
  EXPECT_EQ(out->stats.truncated_requests, 2);
  EXPECT_EQ(out->seconds, 1.25);
  // The results JSON built from it equals the one built from the original.
  EvaluationReport a, b;
  a.tasks = {in};
  b.tasks = {*out};
  nlohmann::json ja = ResultsJson(a), jb = ResultsJson(b);
  ja.erase("date");
  jb.erase("date");
  EXPECT_EQ(ja, jb);
}

TEST(TaskReportJsonTest, MalformedReportsAreInvalidArgument) {
  nlohmann::json json = TaskReportToJson(Sample());
  json.erase("value_bits");
  EXPECT_EQ(TaskReportFromJson(json).status().code(), absl::StatusCode::kInvalidArgument);
  json = TaskReportToJson(Sample());
  json["value_bits"] = nlohmann::json::array({1});
  absl::StatusOr<TaskReport> mismatched = TaskReportFromJson(json);
  EXPECT_EQ(mismatched.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mismatched.status().message().find("1 values for 2 metrics"), std::string::npos);
  EXPECT_EQ(TaskReportFromJson(nlohmann::json::array()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hgeval::tasks
