#include "client/results_table.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "tasks/evaluator.h"

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

std::string FormatProgress(const hgeval::v1::Job& job, double elapsed_s, int width) {
  const int64_t total = job.requests_total();
  const int64_t done = job.requests_done();
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / total) : 0.0;
  const int filled = static_cast<int>(fraction * width);
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string eta = "--:--";
  const int64_t computed_done = done - job.requests_cached();
  if (total > 0 && done > 0 && done < total && elapsed_s > 0.5 && computed_done > 0) {
    const double rate = computed_done / elapsed_s;
    const int64_t seconds = static_cast<int64_t>((total - done) / rate);
    eta = absl::StrFormat("%d:%02d:%02d", seconds / 3600, (seconds / 60) % 60, seconds % 60);
  } else if (total > 0 && done >= total) {
    eta = "0:00:00";
  }
  return absl::StrFormat(
      "[%s] %3d%% %d/%d %s (%d cached)  ETA %s  %s", bar, static_cast<int>(fraction * 100), done,
      total, job.has_niah() ? "cells" : "requests", job.requests_cached(), eta, job.current_task());
}

}  // namespace hgeval::client
