// Job runner on the tasks library: each shard (task) runs through the evaluator on a
// StoreLanguageModel (an LRA classifier's tasks on a StoreLraClassifier); the job's
// results are assembled from the shards' task reports.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "proto/hgeval/v1/bos_mode.h"
#include "server/echoed_name.h"
#include "server/job_runner.h"
#include "server/store_language_model.h"
#include "server/store_lra_classifier.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/harness/task_report_json.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

bool JobsSupported() { return true; }

absl::Status ValidateTasks(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
    if (!task.ok()) {
      return absl::NotFoundError(
          absl::StrCat("unknown task '", EchoedName(name),
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

namespace {

StoreLanguageModelOptions JobLanguageModelOptions(const v1::Job& job, const JobContext& context) {
  StoreLanguageModelOptions options;
  options.add_special = v1::AddsSpecialTokens(job.options().bos_mode());
  options.max_length = job.options().max_length();
  options.cancelled = context.cancelled;
  return options;
}

// The job's model as the tasks library sees it: a language model, or an LRA classifier
// (classify requests only), both answering from the store.
class JobModel {
 public:
  JobModel(const v1::Job& job, const JobContext& context) {
    if (context.model->classifier != nullptr) {
      classifier_ =
          std::make_unique<StoreLraClassifier>(context.model, context.executor, context.cancelled);
    } else {
      language_model_ = std::make_unique<StoreLanguageModel>(context.model, context.executor,
                                                             JobLanguageModelOptions(job, context));
    }
  }
  tasks::LanguageModel& lm() {
    return classifier_ ? static_cast<tasks::LanguageModel&>(*classifier_) : *language_model_;
  }
  int64_t cached() const { return classifier_ ? classifier_->cached() : language_model_->cached(); }
  int64_t computed() const {
    return classifier_ ? classifier_->computed() : language_model_->computed();
  }
  double store_seconds() const { return language_model_ ? language_model_->store_seconds() : 0; }
  double prepare_seconds() const {
    return language_model_ ? language_model_->prepare_seconds() : 0;
  }

 private:
  std::unique_ptr<StoreLanguageModel> language_model_;
  std::unique_ptr<StoreLraClassifier> classifier_;
};

tasks::EvaluatorOptions JobEvaluatorOptions(const v1::Job& job, const JobContext& context) {
  tasks::EvaluatorOptions options;
  options.limit = job.limit();
  options.data_dir = context.data_dir;
  options.log_samples = job.options().log_samples();
  options.cancelled = context.cancelled;
  return options;
}

v1::TaskResult TaskResultOf(const tasks::TaskReport& report) {
  v1::TaskResult result;
  result.set_task(report.name);
  result.set_samples(report.n_effective);
  result.set_version(absl::StrCat(report.version));
  for (size_t m = 0; m < report.metrics.size(); ++m) {
    const std::string& metric = report.metrics[m].name;
    (*result.mutable_metrics())[absl::StrCat(metric, ",none")] = report.values[m];
    if (m < report.stderrs.size() && std::isfinite(report.stderrs[m])) {
      (*result.mutable_metrics())[absl::StrCat(metric, "_stderr,none")] = report.stderrs[m];
    }
  }
  return result;
}

absl::StatusOr<ShardOutcome> RunNiahShard(const v1::Job& job, JobContext& context) {
  ShardOutcome outcome;
  JobContext shard_context = context;
  JobProgress last;
  shard_context.progress = [&](const JobProgress& p) {
    last = p;
    if (context.progress) context.progress(p);
  };
  shard_context.task_done = [&](const v1::TaskResult& r) { outcome.result = r; };
  absl::StatusOr<NiahJobOutput> niah = RunNiahJob(job, shard_context);
  if (!niah.ok()) return niah.status();
  outcome.results_json = std::move(niah->results_json);
  outcome.results_csv = std::move(niah->results_csv);
  outcome.requests_total = last.requests_total;
  outcome.requests_cached = last.requests_cached;
  outcome.requests_computed = last.requests_total - last.requests_cached;
  return outcome;
}

}  // namespace

int JobShardCount(const v1::Job& job) { return job.has_niah() ? 1 : std::max(1, job.tasks_size()); }

std::string JobShardName(const v1::Job& job, int index) {
  if (job.has_niah() || index < 0 || index >= job.tasks_size()) return "niah";
  return job.tasks(index);
}

absl::StatusOr<ShardOutcome> RunJobShard(const v1::Job& job, int index, JobContext& context) {
  if (job.has_niah()) return RunNiahShard(job, context);
  if (index < 0 || index >= job.tasks_size()) {
    return absl::InternalError(absl::StrCat("job '", job.id(), "' has no shard ", index));
  }
  JobModel model(job, context);
  tasks::EvaluatorOptions options = JobEvaluatorOptions(job, context);
  const std::string& name = job.tasks(index);
  JobProgress progress;
  progress.current_task = name;
  options.progress = [&](const std::string& task, int64_t done, int64_t total) {
    progress.current_task = task;
    progress.requests_total = total;
    progress.requests_done = done;
    progress.requests_cached = model.cached();
    if (context.progress) context.progress(progress);
  };
  absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
  if (!task.ok()) return task.status();
  if (context.progress) context.progress(progress);
  absl::StatusOr<tasks::TaskReport> report = tasks::RunTask(model.lm(), **task, options);
  if (!report.ok()) return report.status();
  ShardOutcome outcome;
  outcome.result = TaskResultOf(*report);
  outcome.task_report = tasks::TaskReportToJson(*report);
  outcome.requests_total = report->n_requests;
  outcome.requests_cached = model.cached();
  outcome.requests_computed = model.computed();
  outcome.store_seconds = model.store_seconds();
  outcome.prepare_seconds = model.prepare_seconds();
  progress.requests_total = report->n_requests;
  progress.requests_done = report->n_requests;
  progress.requests_cached = model.cached();
  if (context.progress) context.progress(progress);
  return outcome;
}

absl::StatusOr<std::string> AssembleJobResults(const v1::Job& job,
                                               const std::vector<ShardOutcome>& shards,
                                               JobContext& context) {
  if (job.has_niah()) {
    if (shards.size() != 1) return absl::InternalError("a NIAH job has one shard");
    return shards.front().results_json;
  }
  JobModel model(job, context);
  tasks::EvaluationReport report;
  report.model = model.lm().info();
  report.options = JobEvaluatorOptions(job, context);
  int64_t cached = 0, computed = 0;
  double store_seconds = 0, prepare_seconds = 0;
  for (const ShardOutcome& shard : shards) {
    absl::StatusOr<tasks::TaskReport> task = tasks::TaskReportFromJson(shard.task_report);
    if (!task.ok()) return task.status();
    // Compute time summed over the shards (they may have run side by side).
    report.total_seconds += task->seconds;
    report.tasks.push_back(*std::move(task));
    cached += shard.requests_cached;
    computed += shard.requests_computed;
    store_seconds += shard.store_seconds;
    prepare_seconds += shard.prepare_seconds;
  }
  try {
    nlohmann::json json = tasks::ResultsJson(report);
    if (job.options().log_samples()) {
      // lm-eval writes samples_<task>.jsonl; a job returns them in its results.
      json["samples"] = tasks::SamplesByTask(report);
    }
    json["hgeval_job"] = {
        {"id", job.id()}, {"requests_cached", cached}, {"requests_computed", computed}};
    if (context.model->classifier == nullptr) {
      json["hgeval_job"]["store_seconds"] = store_seconds;
      json["hgeval_job"]["prepare_seconds"] = prepare_seconds;
    }
    return json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const nlohmann::json::exception& e) {
    return absl::InternalError(absl::StrCat("writing results: ", e.what()));
  }
}

}  // namespace hgeval::server
