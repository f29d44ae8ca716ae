// Job runner on the tasks library: each task runs through the evaluator on a
// StoreLanguageModel; per-task results are published as each task finishes.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/job_runner.h"
#include "server/store_language_model.h"
#include "server/store_lra_classifier.h"
#include "tasks/evaluator.h"
#include "tasks/registry.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

bool JobsSupported() { return true; }

absl::Status ValidateTasks(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
    if (!task.ok()) {
      return absl::NotFoundError(
          absl::StrCat("unknown task '", name,
                       "' (known: ", absl::StrJoin(tasks::RegisteredTaskNames(), ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTasksForModel(const std::vector<std::string>& names,
                                   const LoadedModel& model) {
  const bool classifier = model.classifier != nullptr;
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
    if (!task.ok()) return task.status();
    const bool classify = (*task)->output_type() == tasks::RequestType::kClassify;
    if (classify != classifier) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task '", name, "' needs ", classify ? "an LRA classifier" : "a language model",
          "; model '", model.spec.name, "' is ",
          classifier ? "an LRA classifier" : "a language model", " (", model.family, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RunJobTasks(const v1::Job& job, JobContext& context) {
  StoreLanguageModelOptions lm_options;
  lm_options.add_special = AddsSpecialTokens(job.options().bos_mode());
  lm_options.max_length = job.options().max_length();
  lm_options.cancelled = context.cancelled;
  // A language model, or an LRA classifier (classify requests only).
  std::unique_ptr<StoreLanguageModel> language_model;
  std::unique_ptr<StoreLraClassifier> classifier;
  if (context.model->classifier != nullptr) {
    classifier =
        std::make_unique<StoreLraClassifier>(context.model, context.executor, context.cancelled);
  } else {
    language_model =
        std::make_unique<StoreLanguageModel>(context.model, context.executor, lm_options);
  }
  tasks::LanguageModel& lm =
      classifier ? static_cast<tasks::LanguageModel&>(*classifier) : *language_model;
  auto cached = [&] { return classifier ? classifier->cached() : language_model->cached(); };
  auto computed = [&] { return classifier ? classifier->computed() : language_model->computed(); };

  tasks::EvaluationReport report;
  report.model = lm.info();
  report.options.limit = job.limit();
  report.options.data_dir = context.data_dir;
  report.options.log_samples = job.options().log_samples();
  report.options.cancelled = context.cancelled;
  JobProgress progress;
  int64_t finished_total = 0;
  report.options.progress = [&](const std::string& task, int64_t done, int64_t total) {
    progress.current_task = task;
    progress.requests_total = finished_total + total;
    progress.requests_done = finished_total + done;
    progress.requests_cached = cached();
    if (context.progress) context.progress(progress);
  };
  const absl::Time start = absl::Now();
  for (const std::string& name : job.tasks()) {
    absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
    if (!task.ok()) return task.status();
    progress.current_task = name;
    if (context.progress) context.progress(progress);
    absl::StatusOr<tasks::TaskReport> task_report = tasks::RunTask(lm, **task, report.options);
    if (!task_report.ok()) return task_report.status();
    finished_total += task_report->n_requests;
    progress.requests_total = finished_total;
    progress.requests_done = finished_total;
    progress.requests_cached = cached();
    if (context.progress) context.progress(progress);
    v1::TaskResult result;
    result.set_task(name);
    result.set_samples(task_report->n_effective);
    result.set_version(absl::StrCat(task_report->version));
    for (size_t m = 0; m < task_report->metrics.size(); ++m) {
      const std::string& metric = task_report->metrics[m].name;
      (*result.mutable_metrics())[absl::StrCat(metric, ",none")] = task_report->values[m];
      if (m < task_report->stderrs.size() && std::isfinite(task_report->stderrs[m])) {
        (*result.mutable_metrics())[absl::StrCat(metric, "_stderr,none")] = task_report->stderrs[m];
      }
    }
    if (context.task_done) context.task_done(result);
    report.tasks.push_back(*std::move(task_report));
  }
  report.total_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  try {
    nlohmann::json json = tasks::ResultsJson(report);
    if (job.options().log_samples()) {
      // lm-eval writes samples_<task>.jsonl; a job returns them in its results.
      json["samples"] = nlohmann::json::object();
      for (const tasks::TaskReport& task : report.tasks) json["samples"][task.name] = task.samples;
    }
    json["hgeval_job"] = {
        {"id", job.id()}, {"requests_cached", cached()}, {"requests_computed", computed()}};
    if (language_model != nullptr) {
      json["hgeval_job"]["store_seconds"] = language_model->store_seconds();
      json["hgeval_job"]["prepare_seconds"] = language_model->prepare_seconds();
    }
    return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const nlohmann::json::exception& e) {
    return absl::InternalError(absl::StrCat("writing results: ", e.what()));
  }
}

}  // namespace hgeval::server
