// Runs tasks against a LanguageModel and writes lm-evaluation-harness-shaped results:
// the results JSON (results / versions / n-samples / higher_is_better / configs /
// config), per-sample JSONL and the markdown table (lm-eval's make_table columns).
#ifndef HGEVAL_TASKS_HARNESS_EVALUATOR_H_
#define HGEVAL_TASKS_HARNESS_EVALUATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tasks/api/language_model.h"
#include "tasks/api/task.h"
#include "tasks/report/results_table.h"

namespace hgeval::tasks {

struct EvaluatorOptions {
  // First `limit` docs of each task; 0: all. A value in (0, 1) takes ceil(N * limit).
  double limit = 0;
  // Where the task datasets live (the repository's data/ folder).
  std::string data_dir;
  // lm-eval's bootstrap iterations for bootstrapped stderrs (perplexity); 0 disables
  // every stderr, as lm-eval's --bootstrap_iters 0.
  int64_t bootstrap_iters = 100000;
  // Keep per-doc records (requests, responses, metrics) in TaskReport::samples.
  bool log_samples = false;
  // Progress per task: (task, requests done, requests total).
  std::function<void(const std::string& task, int64_t done, int64_t total)> progress;
  std::function<bool()> cancelled;
};

// One task's outcome.
struct TaskReport {
  std::string name;
  double version = 0;
  int64_t n_original = 0;   // docs in the split
  int64_t n_effective = 0;  // docs evaluated (after limit)
  int64_t n_requests = 0;
  // metric name -> aggregated value / stderr (stderr NaN means "N/A").
  std::vector<MetricSpec> metrics;
  std::vector<double> values;
  std::vector<double> stderrs;
  nlohmann::json config;
  std::vector<nlohmann::json> samples;  // when log_samples
  LanguageModelStats stats;             // what the model did for this task
  double seconds = 0;
};

struct EvaluationReport {
  std::vector<TaskReport> tasks;
  LanguageModelInfo model;
  EvaluatorOptions options;
  double total_seconds = 0;
};

// Runs each task in order; stops at the first error.
absl::StatusOr<EvaluationReport> RunTasks(LanguageModel& model,
                                          const std::vector<std::string>& task_names,
                                          const EvaluatorOptions& options);
// The same with already created tasks.
absl::StatusOr<TaskReport> RunTask(LanguageModel& model, const Task& task,
                                   const EvaluatorOptions& options);

// Number of docs lm-eval evaluates for a split of n docs under --limit.
int64_t EffectiveDocCount(int64_t n, double limit);

// lm-eval's results JSON layout.
nlohmann::json ResultsJson(const EvaluationReport& report);
// lm-eval's per-sample records by task, {"piqa": [...], ...} (needs log_samples): what
// every route puts under the results JSON's "samples" when asked to log samples.
nlohmann::json SamplesByTask(const EvaluationReport& report);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_HARNESS_EVALUATOR_H_
