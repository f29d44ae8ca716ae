#include "tests/server/lm_eval_routes.h"

#include <memory>

#include "client/remote_language_model.h"
#include "gtest/gtest.h"
#include "tasks/harness/evaluator.h"
#include "tasks/programs/cli_options.h"
#include "tests/support/paths.h"

namespace hgeval::testing {
namespace {

using Json = nlohmann::json;

Json WithSamples(const tasks::EvaluationReport& report) {
  Json out = tasks::ResultsJson(report);
  for (const tasks::TaskReport& task : report.tasks) out["samples"][task.name] = task.samples;
  return out;
}

tasks::EvaluatorOptions EvaluatorOptions(int limit) {
  tasks::EvaluatorOptions options;
  options.limit = limit;
  options.data_dir = SourcePath("data");
  options.log_samples = true;
  return options;
}

}  // namespace

Json RunInProcess(const std::string& model_path, const std::string& tokenizer_path,
                  const std::vector<std::string>& task_names, int limit,
                  std::optional<tasks::BosRegime> bos, int64_t max_length) {
  absl::StatusOr<tasks::OpenedModel> opened =
      tasks::OpenModelAndTokenizer(model_path, tokenizer_path, LoadOptions{});
  EXPECT_TRUE(opened.ok()) << opened.status();
  if (!opened.ok()) return {};
  tasks::EngineLanguageModelOptions options;
  if (bos.has_value()) options.bos_regime = *bos;
  options.max_length = max_length;
  options.model_name = model_path;
  options.tokenizer_name = tokenizer_path;
  options.model_hash = opened->checkpoint->ContentHash();
  tasks::EngineLanguageModel lm(opened->model.get(), opened->tokenizer.get(), options);
  absl::StatusOr<tasks::EvaluationReport> report =
      tasks::RunTasks(lm, task_names, EvaluatorOptions(limit));
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? WithSamples(*report) : Json();
}

Json RunAsJob(client::Client& client, const std::string& model,
              const std::vector<std::string>& task_names, int limit,
              std::optional<v1::BosMode> bos) {
  v1::SubmitJobRequest request;
  request.set_model(model);
  for (const std::string& name : task_names) request.add_tasks(name);
  request.set_limit(limit);
  request.mutable_options()->set_log_samples(true);
  if (bos.has_value()) request.mutable_options()->set_bos_mode(*bos);
  absl::StatusOr<std::string> id = client.SubmitJob(request);
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return {};
  absl::StatusOr<v1::Job> job = client.WatchJob(*id, nullptr);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return {};
  EXPECT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->error();
  if (job->state() != v1::JOB_STATE_SUCCEEDED) return {};
  return Json::parse(job->results_json());
}

Json RunPerRequest(client::Client& client, const std::string& model,
                   const std::vector<std::string>& task_names, int limit,
                   std::optional<v1::BosMode> bos) {
  client::RemoteLanguageModelOptions options;
  options.model = model;
  if (bos.has_value()) options.bos_mode = *bos;
  absl::StatusOr<std::unique_ptr<client::RemoteLanguageModel>> lm =
      client::RemoteLanguageModel::Create(&client, options);
  EXPECT_TRUE(lm.ok()) << lm.status();
  if (!lm.ok()) return {};
  absl::StatusOr<tasks::EvaluationReport> report =
      tasks::RunTasks(**lm, task_names, EvaluatorOptions(limit));
  EXPECT_TRUE(report.ok()) << report.status();
  return report.ok() ? WithSamples(*report) : Json();
}

void ExpectSameTaskResults(const Json& got, const Json& want,
                           const std::vector<std::string>& task_names) {
  ASSERT_TRUE(got.is_object() && want.is_object());
  for (const std::string& name : task_names) {
    SCOPED_TRACE(name);
    const Json& got_samples = got.at("samples").at(name);
    const Json& want_samples = want.at("samples").at(name);
    ASSERT_EQ(got_samples.size(), want_samples.size());
    ASSERT_FALSE(want_samples.empty());
    for (size_t i = 0; i < want_samples.size(); ++i) {
      SCOPED_TRACE(i);
      EXPECT_EQ(got_samples[i], want_samples[i]);
    }
    EXPECT_EQ(got.at("results").at(name), want.at("results").at(name));
    for (const char* key : {"configs", "versions", "n-shot", "higher_is_better", "n-samples"}) {
      EXPECT_EQ(got.at(key).at(name), want.at(key).at(name)) << key;
    }
  }
}

}  // namespace hgeval::testing
