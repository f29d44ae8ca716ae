// Job runner on the tasks library: each shard (task) runs through the evaluator on a
// StoreLanguageModel (an LRA classifier's tasks on a StoreLraClassifier); the job's
// results are assembled from the shards' task reports.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "proto/hgeval/v1/bos_mode.h"
#include "server/core/echoed_name.h"
#include "server/jobs/job_runner.h"
#include "server/jobs/job_shard_plan.h"
#include "server/jobs/store_language_model.h"
#include "server/jobs/store_lra_classifier.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/harness/task_report_json.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

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

absl::StatusOr<int> JobShardCount(const v1::Job& job, const std::string& data_dir) {
  absl::StatusOr<std::shared_ptr<const JobShardPlan>> plan = PlanJobShards(job, data_dir);
  if (!plan.ok()) return plan.status();
  return static_cast<int>((*plan)->shards.size());
}

std::string JobShardName(const v1::Job& job, int index, const std::string& data_dir) {
  if (job.has_niah()) return "niah";
  absl::StatusOr<std::shared_ptr<const JobShardPlan>> plan = PlanJobShards(job, data_dir);
  if (!plan.ok() || index < 0 || index >= static_cast<int>((*plan)->shards.size())) return "";
  const ShardSpan& span = (*plan)->shards[static_cast<size_t>(index)];
  return job.tasks(span.task);
}

namespace {

// A task restricted to a range of its evaluated docs: what a kDocRange shard evaluates.
class DocRangeTask : public tasks::Task {
 public:
  DocRangeTask(std::unique_ptr<tasks::Task> task, std::vector<tasks::Doc> docs)
      : task_(std::move(task)), docs_(std::move(docs)) {}
  std::string name() const override { return task_->name(); }
  double version() const override { return task_->version(); }
  tasks::RequestType output_type() const override { return task_->output_type(); }
  nlohmann::json config() const override { return task_->config(); }
  std::vector<tasks::MetricSpec> metrics() const override { return task_->metrics(); }
  absl::StatusOr<std::vector<tasks::Doc>> LoadDocs(const std::string&) const override {
    return docs_;
  }
  absl::StatusOr<std::vector<tasks::Request>> Requests(const tasks::Doc& doc) const override {
    return task_->Requests(doc);
  }
  absl::StatusOr<tasks::DocMetrics> Process(
      const tasks::Doc& doc, absl::Span<const tasks::Response> responses) const override {
    return task_->Process(doc, responses);
  }
  absl::StatusOr<double> AggregateCorpus(
      const std::string& metric, absl::Span<const tasks::MetricSample> samples) const override {
    return task_->AggregateCorpus(metric, samples);
  }
  nlohmann::json Target(const tasks::Doc& doc) const override { return task_->Target(doc); }

 private:
  std::unique_ptr<tasks::Task> task_;
  std::vector<tasks::Doc> docs_;
};

}  // namespace

absl::StatusOr<ShardOutcome> RunJobShard(const v1::Job& job, int index, JobContext& context) {
  if (job.has_niah()) return RunNiahShard(job, context);
  absl::StatusOr<std::shared_ptr<const JobShardPlan>> plan = PlanJobShards(job, context.data_dir);
  if (!plan.ok()) return plan.status();
  if (index < 0 || index >= static_cast<int>((*plan)->shards.size())) {
    return absl::InternalError(absl::StrCat("job '", job.id(), "' has no shard ", index));
  }
  const ShardSpan& span = (*plan)->shards[static_cast<size_t>(index)];
  JobModel model(job, context);
  tasks::EvaluatorOptions options = JobEvaluatorOptions(job, context);
  const std::string& name = job.tasks(span.task);
  absl::StatusOr<std::unique_ptr<tasks::Task>> task = tasks::CreateTask(name);
  if (!task.ok()) return task.status();
  if (span.kind == ShardKind::kDocRange) {
    // Only the requests matter here (stored as they are computed); the task's report
    // comes from its report shard. The docs are already cut to the job's limit.
    const std::vector<tasks::Doc>& docs = (*plan)->docs[static_cast<size_t>(span.task)];
    std::vector<tasks::Doc> range;
    range.reserve(span.docs.size());
    for (int64_t d : span.docs) range.push_back(docs[static_cast<size_t>(d)]);
    task = std::make_unique<DocRangeTask>(*std::move(task), std::move(range));
    options.limit = 0;
    options.log_samples = false;
    options.bootstrap_iters = 0;
  }
  // A report shard's requests were counted by its ranges: it reports no progress.
  const bool counts = span.kind != ShardKind::kReport;
  JobProgress progress;
  progress.current_task = name;
  options.progress = [&](const std::string& task_name, int64_t done, int64_t total) {
    progress.current_task = task_name;
    progress.requests_total = total;
    progress.requests_done = done;
    progress.requests_cached = model.cached();
    if (context.progress && counts) context.progress(progress);
  };
  if (context.progress && counts) context.progress(progress);
  absl::StatusOr<tasks::TaskReport> report = tasks::RunTask(model.lm(), **task, options);
  if (!report.ok()) return report.status();
  ShardOutcome outcome;
  outcome.kind = span.kind;
  outcome.task_index = span.task;
  if (span.kind != ShardKind::kDocRange) {
    outcome.result = TaskResultOf(*report);
    outcome.task_report = tasks::TaskReportToJson(*report);
  }
  outcome.requests_total = report->n_requests;
  outcome.requests_cached = model.cached();
  outcome.requests_computed = model.computed();
  outcome.store_seconds = model.store_seconds();
  outcome.prepare_seconds = model.prepare_seconds();
  progress.requests_total = report->n_requests;
  progress.requests_done = report->n_requests;
  progress.requests_cached = model.cached();
  if (context.progress && counts) context.progress(progress);
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
  std::vector<const ShardOutcome*> task_reports;
  for (const ShardOutcome& shard : shards) {
    if (shard.kind != ShardKind::kDocRange) task_reports.push_back(&shard);
    // A report shard answers its task from the store its ranges filled: the ranges'
    // work is what the job computed.
    if (shard.kind == ShardKind::kReport) {
      computed += shard.requests_computed;  // 0 unless a range was lost meanwhile
      continue;
    }
    cached += shard.requests_cached;
    computed += shard.requests_computed;
    store_seconds += shard.store_seconds;
    prepare_seconds += shard.prepare_seconds;
  }
  std::stable_sort(
      task_reports.begin(), task_reports.end(),
      [](const ShardOutcome* a, const ShardOutcome* b) { return a->task_index < b->task_index; });
  for (const ShardOutcome* shard : task_reports) {
    absl::StatusOr<tasks::TaskReport> task = tasks::TaskReportFromJson(shard->task_report);
    if (!task.ok()) return task.status();
    // Compute time summed over the shards (they may have run side by side).
    report.total_seconds += task->seconds;
    report.tasks.push_back(*std::move(task));
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
