// Shared-context reuse benchmark: tokens fed to the model per task with and without
// reuse (counted exactly, without running the model), and the end-to-end wall time of
// the suite (default: the eight commonsense tasks + lambada_openai, no limit) with reuse
// on (and optionally off). Writes JSON.
//   tasks_reuse_bench --model PATH --tokenizer PATH [--tasks LIST] [--limit N]
//                     [--output FILE] [--count-only] [--run-scratch]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "nlohmann/json.hpp"
#include "tasks/cli_options.h"
#include "tasks/engine_language_model.h"
#include "tasks/evaluator.h"
#include "tasks/registry.h"

namespace hgeval::tasks {
namespace {

constexpr char kUsage[] =
    R"(tasks_reuse_bench: tokens fed with / without shared-context reuse, suite wall time.

  --model PATH          checkpoint folder or llama2.c .bin (required)
  --tokenizer PATH      tokenizer (default: the model folder's)
  --tasks LIST          default: piqa,hellaswag,winogrande,arc_easy,arc_challenge,
                        openbookqa,boolq,social_iqa,lambada_openai
  --limit N             docs per task (default: all)
  --bos MODE            none | tokenizer (default tokenizer)
  --max-length N        lm-eval max_length
  --device DEV          cpu (default) | cuda[:N];  --dtype fp32|bf16;  --threads N
  --max-batch-tokens N  tokens per forward call (default 4096)
  --output FILE         JSON (default: stdout)
  --count-only          only count tokens, do not run the model
  --run-scratch         also time the suite without reuse
  --truncate-long-continuations  score only the last max_length tokens of longer
                        continuations (lm-eval refuses them)
)";

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
  auto args = ParseArgs(argc, argv,
                        {"model", "tokenizer", "tasks", "limit", "bos", "max-length", "device",
                         "dtype", "threads", "max-batch-tokens", "output", "data-dir"},
                        {"count-only", "run-scratch", "truncate-long-continuations"});
  if (!args.ok()) {
    std::fprintf(stderr, "%s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (args->help || args->Get("model").empty()) {
    std::fputs(kUsage, args->help ? stdout : stderr);
    return args->help ? 0 : 2;
  }
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "tasks_reuse_bench: %s\n", s.ToString().c_str());
    return 1;
  };
  auto tasks = ExpandTaskList(
      args->Get("tasks",
                "piqa,hellaswag,winogrande,arc_easy,arc_challenge,openbookqa,boolq,social_iqa,"
                "lambada_openai"));
  if (!tasks.ok()) return fail(tasks.status());
  int64_t max_length = 0, threads = 0, batch_tokens = 4096;
  double limit = 0;
  if ((!args->Get("max-length").empty() &&
       !absl::SimpleAtoi(args->Get("max-length"), &max_length)) ||
      (!args->Get("threads").empty() && !absl::SimpleAtoi(args->Get("threads"), &threads)) ||
      (!args->Get("max-batch-tokens").empty() &&
       !absl::SimpleAtoi(args->Get("max-batch-tokens"), &batch_tokens)) ||
      (!args->Get("limit").empty() && !absl::SimpleAtod(args->Get("limit"), &limit))) {
    return fail(absl::InvalidArgumentError("bad numeric option"));
  }
  auto bos = ParseBosRegime(args->Get("bos", "tokenizer"));
  if (!bos.ok()) return fail(bos.status());
  auto opened =
      OpenModelAndTokenizer(args->Get("model"), args->Get("tokenizer"), args->Get("device", "cpu"),
                            args->Get("dtype", "fp32"), static_cast<int>(threads));
  if (!opened.ok()) return fail(opened.status());

  EngineLanguageModelOptions options;
  options.bos_regime = *bos;
  options.max_length = max_length;
  options.max_batch_tokens = batch_tokens;
  options.model_name = args->Get("model");
  options.truncate_long_continuations = args->Has("truncate-long-continuations");
  EvaluatorOptions eval_options;
  eval_options.limit = limit;
  eval_options.data_dir = args->Get("data-dir", DefaultDataDir());
  eval_options.bootstrap_iters = 0;

  // Exact token counts, no model run.
  nlohmann::json out;
  out["model"] = args->Get("model");
  out["tokenizer"] = args->Get("tokenizer");
  out["backend"] = opened->model->info().backend;
  out["dtype"] = opened->model->info().dtype;
  out["limit"] = limit;
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

  if (!args->Has("count-only")) {
    eval_options.bootstrap_iters = 100000;
    options.count_only = false;
    for (bool reuse : {true, false}) {
      if (!reuse && !args->Has("run-scratch")) continue;
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
  if (args->Get("output").empty()) {
    std::fputs(text.c_str(), stdout);
  } else {
    std::ofstream(args->Get("output")) << text;
  }
  return 0;
}

}  // namespace
}  // namespace hgeval::tasks

int main(int argc, char** argv) { return hgeval::tasks::Run(argc, argv); }
