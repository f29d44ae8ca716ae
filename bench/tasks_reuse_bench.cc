// Shared-context reuse benchmark: tokens fed to the model per task with and without
// reuse (counted exactly, without running the model), and the end-to-end wall time of
// the suite (default: the eight commonsense tasks + lambada_openai, no limit) with reuse
// on (and optionally off). Writes JSON.
//   tasks_reuse_bench --model PATH --tokenizer PATH [--tasks LIST] [--limit N]
//                     [--output FILE] [--count_only] [--run_scratch]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "engine/cli/command_line.h"
#include "engine/cli/common_flags.h"
#include "engine/cli/model_flags.h"
#include "nlohmann/json.hpp"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"
#include "tasks/programs/cli_options.h"
#include "tasks/programs/eval_flags.h"

ABSL_FLAG(int64_t, max_batch_tokens, 4096, "Tokens per forward call.");
ABSL_FLAG(bool, count_only, false, "Only count tokens, do not run the model.");
ABSL_FLAG(bool, run_scratch, false, "Also time the suite without reuse.");
ABSL_FLAG(bool, truncate_long_continuations, false,
          "Score only the last max_length tokens of longer continuations (lm-eval refuses "
          "them).");

namespace hgeval::tasks {
namespace {

constexpr char kDefaultTasks[] =
    "piqa,hellaswag,winogrande,arc_easy,arc_challenge,openbookqa,boolq,social_iqa,"
    "lambada_openai";

constexpr char kUsage[] =
    "tasks_reuse_bench: tokens fed with / without shared-context reuse, suite wall time.\n"
    "Usage: tasks_reuse_bench --model PATH [--tokenizer PATH] [flags]";

struct SuiteRun {
  double seconds = 0;
  int64_t tokens_fed = 0;
  int64_t tokens_scored = 0;
  nlohmann::json per_task = nlohmann::json::object();
  nlohmann::json results;
};

absl::StatusOr<SuiteRun> RunSuite(Model* model, const Tokenizer* tokenizer,
                                  EngineLanguageModelOptions options,
                                  const std::vector<std::string>& tasks,
                                  const EvaluatorOptions& eval_options) {
  EngineLanguageModel lm(model, tokenizer, options);
  const auto start = std::chrono::steady_clock::now();
  auto report = RunTasks(lm, tasks, eval_options);
  if (!report.ok()) return report.status();
  SuiteRun run;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& t : report->tasks) {
    run.tokens_fed += t.stats.tokens_fed;
    run.tokens_scored += t.stats.tokens_scored;
    run.per_task[t.name] = {{"requests", t.n_requests},
                            {"docs", t.n_effective},
                            {"tokens_fed", t.stats.tokens_fed},
                            {"tokens_scored", t.stats.tokens_scored},
                            {"seconds", t.seconds}};
  }
  run.results = ResultsJson(*report)["results"];
  return run;
}

int Run(int argc, char** argv) {
  cli::ParseCommandLine(argc, argv, kUsage);
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "tasks_reuse_bench: %s\n", s.ToString().c_str());
    return 1;
  };
  auto model_path = cli::ModelPathFromFlags();
  if (!model_path.ok()) return fail(model_path.status());
  // The commonsense tasks + lambada_openai unless --tasks says otherwise.
  auto tasks = ExpandTaskList(TasksFlag().empty() ? kDefaultTasks : TasksFlag());
  if (!tasks.ok()) return fail(tasks.status());
  auto tokenizer_bos = cli::TokenizerBosFromFlags();
  if (!tokenizer_bos.ok()) return fail(tokenizer_bos.status());
  auto evaluator_options = EvaluatorOptionsFromFlags();
  if (!evaluator_options.ok()) return fail(evaluator_options.status());
  auto load_options = cli::LoadOptionsFromFlags();
  if (!load_options.ok()) return fail(load_options.status());
  auto opened = OpenModelAndTokenizer(*model_path, absl::GetFlag(FLAGS_tokenizer), *load_options);
  if (!opened.ok()) return fail(opened.status());

  EngineLanguageModelOptions options;
  options.bos_regime = *tokenizer_bos ? BosRegime::kTokenizer : BosRegime::kNone;
  options.max_length = MaxLengthFromFlags();
  options.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  options.model_name = *model_path;
  options.truncate_long_continuations = absl::GetFlag(FLAGS_truncate_long_continuations);
  EvaluatorOptions eval_options = *evaluator_options;
  eval_options.bootstrap_iters = 0;

  // Exact token counts, no model run.
  nlohmann::json out;
  out["model"] = *model_path;
  out["tokenizer"] = absl::GetFlag(FLAGS_tokenizer);
  out["backend"] = opened->model->info().backend;
  out["dtype"] = opened->model->info().dtype;
  out["limit"] = eval_options.limit;
  out["tasks"] = nlohmann::json::object();
  options.count_only = true;
  options.context_reuse = true;
  auto reuse_count =
      RunSuite(opened->model.get(), opened->tokenizer.get(), options, *tasks, eval_options);
  options.context_reuse = false;
  auto scratch_count =
      RunSuite(opened->model.get(), opened->tokenizer.get(), options, *tasks, eval_options);
  if (!reuse_count.ok()) return fail(reuse_count.status());
  if (!scratch_count.ok()) return fail(scratch_count.status());
  for (const std::string& task : *tasks) {
    const int64_t with = reuse_count->per_task[task]["tokens_fed"];
    const int64_t without = scratch_count->per_task[task]["tokens_fed"];
    out["tasks"][task] = {{"docs", reuse_count->per_task[task]["docs"]},
                          {"requests", reuse_count->per_task[task]["requests"]},
                          {"tokens_scored", reuse_count->per_task[task]["tokens_scored"]},
                          {"tokens_fed_with_reuse", with},
                          {"tokens_fed_without_reuse", without},
                          {"reduction", without > 0 ? 1.0 - double(with) / double(without) : 0.0},
                          {"ratio", with > 0 ? double(without) / double(with) : 0.0}};
    std::fprintf(stderr, "%-16s tokens fed: %12lld with reuse, %12lld without (-%.1f%%)\n",
                 task.c_str(), static_cast<long long>(with), static_cast<long long>(without),
                 without > 0 ? 100.0 * (1.0 - double(with) / double(without)) : 0.0);
  }
  out["total"] = {
      {"tokens_fed_with_reuse", reuse_count->tokens_fed},
      {"tokens_fed_without_reuse", scratch_count->tokens_fed},
      {"tokens_scored", reuse_count->tokens_scored},
      {"reduction", scratch_count->tokens_fed > 0
                        ? 1.0 - double(reuse_count->tokens_fed) / double(scratch_count->tokens_fed)
                        : 0.0}};

  if (!absl::GetFlag(FLAGS_count_only)) {
    eval_options.bootstrap_iters = 100000;
    options.count_only = false;
    for (bool reuse : {true, false}) {
      if (!reuse && !absl::GetFlag(FLAGS_run_scratch)) continue;
      options.context_reuse = reuse;
      std::fprintf(stderr, "running the suite %s reuse...\n", reuse ? "with" : "without");
      auto run =
          RunSuite(opened->model.get(), opened->tokenizer.get(), options, *tasks, eval_options);
      if (!run.ok()) return fail(run.status());
      out[reuse ? "suite_with_reuse" : "suite_without_reuse"] = {
          {"wall_seconds", run->seconds},
          {"tokens_fed", run->tokens_fed},
          {"tokens_scored", run->tokens_scored},
          {"tokens_fed_per_second", run->seconds > 0 ? run->tokens_fed / run->seconds : 0.0},
          {"per_task", run->per_task},
          {"results", run->results}};
      std::fprintf(stderr, "suite %s reuse: %.2f s, %lld tokens fed\n", reuse ? "with" : "without",
                   run->seconds, static_cast<long long>(run->tokens_fed));
    }
  }
  const std::string text = out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (OutputFromFlags().empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream(OutputFromFlags()) << text;
  }
  return 0;
}

}  // namespace
}  // namespace hgeval::tasks

int main(int argc, char** argv) { return hgeval::tasks::Run(argc, argv); }
