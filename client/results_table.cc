#include "client/results_table.h"

#include <cmath>
#include <cstdlib>

#include "nlohmann/json.hpp"
#include "tasks/report/results_table.h"

namespace hgeval::client {

std::string FormatResultsTable(const hgeval::v1::Job& job) {
  // A finished job carries lm-eval's results JSON (with higher_is_better for the arrows);
  // a job that stopped part way has only its per-task metrics, rebuilt in that form. Both
  // print through the evaluator's own table, as hgeval-eval does.
  if (!job.results_json().empty()) {
    const nlohmann::json parsed = nlohmann::json::parse(job.results_json(), nullptr, false);
    if (parsed.is_object() && parsed.contains("results")) return tasks::ResultsTable(parsed);
  }
  nlohmann::json results = {{"results", nlohmann::json::object()},
                            {"versions", nlohmann::json::object()},
                            {"n-shot", nlohmann::json::object()}};
  for (const hgeval::v1::TaskResult& task : job.results()) {
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [key, value] : task.metrics()) {
      if (std::isfinite(value)) {
        metrics[key] = value;
      } else {
        metrics[key] = "N/A";
      }
    }
    results["results"][task.task()] = metrics;
    // lm-eval's versions are numbers; the wire carries their text.
    char* end = nullptr;
    const double version = std::strtod(task.version().c_str(), &end);
    if (!task.version().empty() && end != nullptr && *end == '\0') {
      results["versions"][task.task()] = version;
    }
    results["n-shot"][task.task()] = job.options().num_fewshot();
  }
  return tasks::ResultsTable(results);
}

}  // namespace hgeval::client
