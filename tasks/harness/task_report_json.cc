#include "tasks/harness/task_report_json.h"

#include <bit>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace hgeval::tasks {
namespace {

nlohmann::json Bits(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(std::bit_cast<uint64_t>(v));
  return out;
}

std::vector<double> FromBits(const nlohmann::json& bits) {
  std::vector<double> out;
  for (const nlohmann::json& b : bits) out.push_back(std::bit_cast<double>(b.get<uint64_t>()));
  return out;
}

}  // namespace

nlohmann::json TaskReportToJson(const TaskReport& report) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricSpec& m : report.metrics) {
    metrics.push_back({{"name", m.name},
                       {"aggregation", static_cast<int>(m.aggregation)},
                       {"higher_is_better", m.higher_is_better}});
  }
  return {{"name", report.name},
          {"version_bits", std::bit_cast<uint64_t>(report.version)},
          {"n_original", report.n_original},
          {"n_effective", report.n_effective},
          {"n_requests", report.n_requests},
          {"metrics", metrics},
          {"value_bits", Bits(report.values)},
          {"stderr_bits", Bits(report.stderrs)},
          {"config", report.config},
          {"samples", report.samples},
          {"stats",
           {{"requests", report.stats.requests},
            {"tokens_fed", report.stats.tokens_fed},
            {"tokens_scored", report.stats.tokens_scored},
            {"tokens_generated", report.stats.tokens_generated},
            {"truncated_requests", report.stats.truncated_requests}}},
          {"seconds", report.seconds}};
}

absl::StatusOr<TaskReport> TaskReportFromJson(const nlohmann::json& json) {
  try {
    TaskReport report;
    report.name = json.at("name").get<std::string>();
    report.version = std::bit_cast<double>(json.at("version_bits").get<uint64_t>());
    report.n_original = json.at("n_original").get<int64_t>();
    report.n_effective = json.at("n_effective").get<int64_t>();
    report.n_requests = json.at("n_requests").get<int64_t>();
    for (const nlohmann::json& m : json.at("metrics")) {
      MetricSpec spec;
      spec.name = m.at("name").get<std::string>();
      spec.aggregation = static_cast<Aggregation>(m.at("aggregation").get<int>());
      spec.higher_is_better = m.at("higher_is_better").get<bool>();
      report.metrics.push_back(std::move(spec));
    }
    report.values = FromBits(json.at("value_bits"));
    report.stderrs = FromBits(json.at("stderr_bits"));
    if (report.values.size() != report.metrics.size()) {
      return absl::InvalidArgumentError(absl::StrCat("task report '", report.name,
                                                     "': ", report.values.size(), " values for ",
                                                     report.metrics.size(), " metrics"));
    }
    report.config = json.at("config");
    for (const nlohmann::json& s : json.at("samples")) report.samples.push_back(s);
    const nlohmann::json& stats = json.at("stats");
    report.stats.requests = stats.at("requests").get<int64_t>();
    report.stats.tokens_fed = stats.at("tokens_fed").get<int64_t>();
    report.stats.tokens_scored = stats.at("tokens_scored").get<int64_t>();
    report.stats.tokens_generated = stats.at("tokens_generated").get<int64_t>();
    report.stats.truncated_requests = stats.at("truncated_requests").get<int64_t>();
    report.seconds = json.at("seconds").get<double>();
    return report;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("task report JSON: ", e.what()));
  }
}

}  // namespace hgeval::tasks
