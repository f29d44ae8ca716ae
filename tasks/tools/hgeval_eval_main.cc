// hgeval-eval: lm-evaluation-harness tasks, in-process, on a local checkpoint.
//   hgeval-eval --model PATH [--tokenizer PATH] --tasks piqa,hellaswag [--limit N]
//               [--bos none|tokenizer] [--max_length N] [--output results.json]
//               [--log_samples] [--nocontext_reuse] [--windowless_rolling] ...
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/cli/command_line.h"
#include "engine/cli/common_flags.h"
#include "engine/cli/model_flags.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/token_only_tokenizer.h"
#include "engine/util/status_macros.h"
#include "tasks/api/registry.h"
#include "tasks/harness/evaluator.h"
#include "tasks/harness/progress_bar.h"
#include "tasks/lra/engine_lra_classifier.h"
#include "tasks/models/engine_language_model.h"
#include "tasks/programs/cli_options.h"
#include "tasks/programs/eval_flags.h"

ABSL_FLAG(std::string, table, "", "Also write the markdown table to this file.");
ABSL_FLAG(bool, context_reuse, true,
          "Score the choices of a context from one shared-context fork (false: every request "
          "from scratch; same numbers).");
ABSL_FLAG(bool, windowless_rolling, false,
          "Rolling log-likelihood in one window carrying state (recurrent models) instead of "
          "lm-eval's windows.");
ABSL_FLAG(int64_t, bootstrap_iters, 100000, "Bootstrap iterations for perplexity stderr.");
ABSL_FLAG(int64_t, max_batch_tokens, 0,
          "Tokens per forward call (0: the model's choice, 4096 on the CPU, 16384 on CUDA).");
ABSL_FLAG(bool, truncate_long_continuations, false,
          "Score only the last max_length tokens of a longer continuation (lm-eval refuses "
          "such requests; counted in the results' hgeval.tasks[task].truncated_requests).");

namespace hgeval::tasks {
namespace {

constexpr char kUsage[] =
    "hgeval-eval: lm-evaluation-harness tasks (v0.4.x semantics), in-process.\n"
    "\n"
    "Usage: hgeval-eval --model PATH --tasks NAMES [flags]\n"
    "Prints lm-eval's header and results table; --output writes the results JSON.";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "hgeval-eval: %s\n", status.ToString().c_str());
  return 1;
}

// Runs the tasks, prints lm-eval's header and table, writes --output and --table.
// `model_header` is the model's part of the header line.
int EvaluateAndReport(LanguageModel& lm, const std::vector<std::string>& task_names,
                      const EvaluatorOptions& eval_options, const std::string& model_header) {
  auto report = RunTasks(lm, task_names, eval_options);
  if (!report.ok()) return Fail(report.status());

  nlohmann::json results = ResultsJson(*report);
  const std::string table = ResultsTable(results);
  // lm-eval's header line: the model, then the run's settings.
  const std::string header =
      model_header +
      ", limit: " + (eval_options.limit > 0 ? absl::StrFormat("%g", eval_options.limit) : "None") +
      ", num_fewshot: 0, batch_size: auto\n";
  std::fputs(header.c_str(), stdout);
  std::fputs(table.c_str(), stdout);
  auto write_file = [&](const std::string& path, const std::string& text) -> bool {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
      std::fprintf(stderr, "hgeval-eval: cannot write %s\n", path.c_str());
      return false;
    }
    return true;
  };
  const std::string output = OutputFromFlags();
  if (!output.empty() &&
      !write_file(output,
                  results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) {
    return 1;
  }
  const std::string table_path = absl::GetFlag(FLAGS_table);
  if (!table_path.empty() && !write_file(table_path, header + table)) return 1;
  if (eval_options.log_samples) {
    // lm-eval's per-task files (EvaluationTracker.save_results_samples): one JSON record a
    // line, beside --output (else in the working folder), stamped with the run's time.
    const std::string folder =
        output.empty() ? "." : std::filesystem::path(output).parent_path().string();
    const std::string stamp =
        absl::FormatTime("%Y-%m-%dT%H-%M-%E6S", absl::Now(), absl::LocalTimeZone());
    for (const TaskReport& task : report->tasks) {
      std::string lines;
      for (const nlohmann::json& sample : task.samples) {
        lines += sample.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      }
      const std::string path = (std::filesystem::path(folder.empty() ? "." : folder) /
                                ("samples_" + task.name + "_" + stamp + ".jsonl"))
                                   .string();
      if (!write_file(path, lines)) return 1;
    }
  }
  if (cli::ProgressFromFlags()) {
    int64_t fed = 0, scored = 0;
    for (const auto& t : report->tasks) {
      fed += t.stats.tokens_fed;
      scored += t.stats.tokens_scored;
    }
    std::fprintf(stderr, "done in %.1fs: %lld tokens fed, %lld tokens scored\n",
                 report->total_seconds, static_cast<long long>(fed),
                 static_cast<long long>(scored));
  }
  return 0;
}

int Run(int argc, char** argv) {
  const std::vector<std::string> positional = cli::ParseCommandLine(argc, argv, kUsage);
  if (!positional.empty()) {
    std::fprintf(stderr, "hgeval-eval: unexpected argument \"%s\" (see --help)\n",
                 positional[0].c_str());
    return 2;
  }
  const std::string tasks_flag = TasksFlag();
  if (tasks_flag == "list") {
    for (const auto& name : RegisteredTaskNames()) std::printf("%s\n", name.c_str());
    return 0;
  }
  const std::string model_path = absl::GetFlag(FLAGS_model);
  if (model_path.empty() || tasks_flag.empty()) {
    std::fprintf(stderr, "hgeval-eval: --model and --tasks are required (see --help)\n");
    return 2;
  }

  auto task_names = ExpandTaskList(tasks_flag);
  if (!task_names.ok()) return Fail(task_names.status());
  EngineLanguageModelOptions lm_options;
  auto tokenizer_bos = cli::TokenizerBosFromFlags();
  if (!tokenizer_bos.ok()) return Fail(tokenizer_bos.status());
  lm_options.bos_regime = *tokenizer_bos ? BosRegime::kTokenizer : BosRegime::kNone;
  lm_options.max_length = MaxLengthFromFlags();
  lm_options.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  lm_options.context_reuse = absl::GetFlag(FLAGS_context_reuse);
  lm_options.windowless_rolling = absl::GetFlag(FLAGS_windowless_rolling);
  lm_options.truncate_long_continuations = absl::GetFlag(FLAGS_truncate_long_continuations);
  lm_options.model_name = model_path;
  const std::string tokenizer_flag = absl::GetFlag(FLAGS_tokenizer);
  lm_options.tokenizer_name = tokenizer_flag.empty() ? model_path : tokenizer_flag;

  auto evaluator_options = EvaluatorOptionsFromFlags();
  if (!evaluator_options.ok()) return Fail(evaluator_options.status());
  EvaluatorOptions& eval_options = *evaluator_options;
  eval_options.bootstrap_iters = absl::GetFlag(FLAGS_bootstrap_iters);
  const bool progress = cli::ProgressFromFlags();
  ProgressBar bar(progress);
  eval_options.progress = [&](const std::string& task, int64_t done, int64_t total) {
    bar.Update({.done = done, .total = total, .label = task});
  };

  // LRA tasks (classify requests) run on an LRA classifier checkpoint, not a language
  // model: no tokenizer (its lra_vocab.json sits beside it), no lm-eval options.
  bool classify_only = true;
  for (const std::string& name : *task_names) {
    auto task = CreateTask(name);
    if (!task.ok()) return Fail(task.status());
    classify_only = classify_only && (*task)->output_type() == RequestType::kClassify;
  }
  if (classify_only) {
    auto lra_options = cli::LoadOptionsFromFlags();
    if (!lra_options.ok()) return Fail(lra_options.status());
    auto lra = lra::EngineLraClassifier::Load(model_path, *lra_options);
    if (!lra.ok()) return Fail(lra.status());
    if (progress) {
      std::fprintf(stderr, "model %s (%s, %s fp32)\n", model_path.c_str(),
                   (*lra)->info().family.c_str(), (*lra)->info().backend.c_str());
    }
    return EvaluateAndReport(**lra, *task_names, eval_options, model_path);
  }

  // Token-level tasks (mqar) need no tokenizer, and checkpoints trained on them have none.
  bool token_level_only = true;
  for (const std::string& name : *task_names) {
    auto task = CreateTask(name);
    if (!task.ok()) return Fail(task.status());
    token_level_only = token_level_only && (*task)->output_type() == RequestType::kTokenTargets;
  }
  std::string tokenizer_path = tokenizer_flag;
  const bool no_tokenizer =
      tokenizer_path == "none" || (tokenizer_path.empty() && token_level_only);
  if (no_tokenizer) {
    tokenizer_path = "";
    lm_options.tokenizer_name = "none";
  }
  auto load_options = cli::LoadOptionsFromFlags();
  if (!load_options.ok()) return Fail(load_options.status());
  auto opened = OpenModelAndTokenizer(model_path, tokenizer_path, *load_options,
                                      /*load_tokenizer=*/!no_tokenizer);
  if (!opened.ok()) return Fail(opened.status());
  if (no_tokenizer) {
    opened->tokenizer =
        MakeTokenOnlyTokenizer(static_cast<int32_t>(opened->model->info().vocab_size));
  }
  lm_options.model_hash = opened->checkpoint->ContentHash();
  EngineLanguageModel lm(opened->model.get(), opened->tokenizer.get(), lm_options);
  if (progress) {
    std::fprintf(stderr, "model %s (%s, %s %s), max_length %lld, bos %s, reuse %s\n",
                 lm_options.model_name.c_str(), lm.info().family.c_str(), lm.info().backend.c_str(),
                 lm.info().dtype.c_str(), static_cast<long long>(lm.max_length()),
                 lm.info().bos_regime.c_str(), lm_options.context_reuse ? "on" : "off");
  }
  const std::string header = lm_options.model_name + " (bos=" + lm.info().bos_regime +
                             ",max_length=" + std::to_string(lm.max_length()) + ")";
  return EvaluateAndReport(lm, *task_names, eval_options, header);
}

}  // namespace
}  // namespace hgeval::tasks

int main(int argc, char** argv) { return hgeval::tasks::Run(argc, argv); }
