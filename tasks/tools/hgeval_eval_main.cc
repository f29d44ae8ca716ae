// hgeval-eval: lm-evaluation-harness tasks, in-process, on a local checkpoint.
//   hgeval-eval --model PATH [--tokenizer PATH] --tasks piqa,hellaswag [--limit N]
//               [--bos none|tokenizer] [--max-length N] [--output results.json]
//               [--log-samples FILE] [--no-reuse] [--windowless] ...
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/token_only_tokenizer.h"
#include "engine/util/status_macros.h"
#include "tasks/cli_options.h"
#include "tasks/engine_language_model.h"
#include "tasks/evaluator.h"
#include "tasks/lra/engine_lra_classifier.h"
#include "tasks/registry.h"

namespace hgeval::tasks {
namespace {

constexpr char kUsage[] =
    R"(hgeval-eval: lm-evaluation-harness tasks (v0.4.x semantics), in-process.

Usage: hgeval-eval --model PATH --tasks NAMES [options]

  --model PATH          Hugging Face checkpoint folder or llama2.c .bin file
  --tokenizer PATH      tokenizer file or folder (default: the model folder's); "none"
                        for token-level tasks only (mqar), the default when every
                        task given is one
  --tasks NAMES         comma-separated lm-eval task names; groups: commonsense,
                        lm_eval_suite (all eleven), scrolls (the seven SCROLLS
                        tasks); "list" prints the known tasks
  --limit N             first N docs per task (a value < 1 is a fraction)
  --bos MODE            none (lm-eval <= 0.4.9.1) or tokenizer (>= 0.4.9.2, default)
  --max-length N        lm-eval max_length (default: config max_position_embeddings,
                        else 2048)
  --output FILE         results JSON (lm-eval layout); the table goes to stdout
  --table FILE          also write the markdown table to FILE
  --log-samples FILE    per-sample JSONL
  --no-reuse            score every request from scratch (no shared-context forks)
  --windowless          rolling log-likelihood in one window carrying state
                        (recurrent models) instead of lm-eval's windows
  --data-dir DIR        task datasets (default: $HGEVAL_DATA_DIR or the source data/)
  --device DEV          cpu (default), cuda, cuda:N
  --dtype T             fp32 (default) or bf16 (CUDA)
  --threads N           CPU threads (0 = all)
  --bootstrap-iters N   bootstrap iterations for perplexity stderr (default 100000)
  --max-batch-tokens N  tokens per forward call (default 0: the model's choice, 4096 on
                         the CPU, 16384 on CUDA)
  --truncate-long-continuations
                        score only the last max_length tokens of a longer
                        continuation (lm-eval refuses such requests; counted in
                        the results' hgeval.tasks[task].truncated_requests)
  --quiet               no progress on stderr
)";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "hgeval-eval: %s\n", status.ToString().c_str());
  return 1;
}

// Runs the tasks, prints lm-eval's header and table, writes --output, --table and
// --log-samples. `model_header` is the model's part of the header line.
int EvaluateAndReport(LanguageModel& lm, const std::vector<std::string>& task_names,
                      const EvaluatorOptions& eval_options, const std::string& model_header,
                      const ParsedArgs& args, bool quiet) {
  auto report = RunTasks(lm, task_names, eval_options);
  if (!report.ok()) return Fail(report.status());

  const nlohmann::json results = ResultsJson(*report);
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
  if (!args.Get("output").empty() &&
      !write_file(args.Get("output"),
                  results.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) {
    return 1;
  }
  if (!args.Get("table").empty() && !write_file(args.Get("table"), header + table)) return 1;
  if (eval_options.log_samples && !write_file(args.Get("log-samples"), SamplesJsonl(*report))) {
    return 1;
  }
  if (!quiet) {
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
  auto args = ParseArgs(argc, argv,
                        {"model", "tokenizer", "tasks", "limit", "bos", "max-length", "output",
                         "table", "log-samples", "data-dir", "device", "dtype", "threads",
                         "bootstrap-iters", "max-batch-tokens"},
                        {"no-reuse", "windowless", "quiet", "truncate-long-continuations"});
  if (!args.ok()) {
    std::fprintf(stderr, "hgeval-eval: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (args->help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args->Get("tasks") == "list") {
    for (const auto& name : RegisteredTaskNames()) std::printf("%s\n", name.c_str());
    return 0;
  }
  if (args->Get("model").empty() || args->Get("tasks").empty()) {
    std::fprintf(stderr, "hgeval-eval: --model and --tasks are required (see --help)\n");
    return 2;
  }
  const auto fail = Fail;
  auto int_option = [&](const char* key, int64_t fallback) -> absl::StatusOr<int64_t> {
    const std::string v = args->Get(key);
    if (v.empty()) return fallback;
    int64_t out = 0;
    if (!absl::SimpleAtoi(v, &out)) {
      return absl::InvalidArgumentError(std::string("--") + key + " needs an integer");
    }
    return out;
  };

  auto task_names = ExpandTaskList(args->Get("tasks"));
  if (!task_names.ok()) return fail(task_names.status());
  EngineLanguageModelOptions lm_options;
  auto bos = ParseBosRegime(args->Get("bos", "tokenizer"));
  if (!bos.ok()) return fail(bos.status());
  lm_options.bos_regime = *bos;
  auto max_length = int_option("max-length", 0);
  auto threads = int_option("threads", 0);
  auto bootstrap = int_option("bootstrap-iters", 100000);
  auto batch_tokens = int_option("max-batch-tokens", 0);
  for (const auto* s : {&max_length, &threads, &bootstrap, &batch_tokens}) {
    if (!s->ok()) return fail(s->status());
  }
  lm_options.max_length = *max_length;
  lm_options.max_batch_tokens = *batch_tokens;
  lm_options.context_reuse = !args->Has("no-reuse");
  lm_options.windowless_rolling = args->Has("windowless");
  lm_options.truncate_long_continuations = args->Has("truncate-long-continuations");
  lm_options.model_name = args->Get("model");
  lm_options.tokenizer_name = args->Get("tokenizer", args->Get("model"));

  EvaluatorOptions eval_options;
  eval_options.data_dir = args->Get("data-dir", DefaultDataDir());
  eval_options.bootstrap_iters = *bootstrap;
  eval_options.log_samples = !args->Get("log-samples").empty();
  if (!args->Get("limit").empty() && !absl::SimpleAtod(args->Get("limit"), &eval_options.limit)) {
    return fail(absl::InvalidArgumentError("--limit needs a number"));
  }
  const bool quiet = args->Has("quiet");
  auto last_report = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  const auto start = std::chrono::steady_clock::now();
  eval_options.progress = [&](const std::string& task, int64_t done, int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    if (quiet || (done < total && now - last_report < std::chrono::seconds(1))) return;
    last_report = now;
    std::fprintf(stderr, "[%s] %lld/%lld requests (%.0f%%) %.1fs\n", task.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total),
                 total ? 100.0 * done / total : 100.0,
                 std::chrono::duration<double>(now - start).count());
  };

  // LRA tasks (classify requests) run on an LRA classifier checkpoint, not a language
  // model: no tokenizer (its lra_vocab.json sits beside it), no lm-eval options.
  bool classify_only = true;
  for (const std::string& name : *task_names) {
    auto task = CreateTask(name);
    if (!task.ok()) return fail(task.status());
    classify_only = classify_only && (*task)->output_type() == RequestType::kClassify;
  }
  if (classify_only) {
    LoadOptions lra_options;
    lra_options.device = args->Get("device", "cpu");
    lra_options.dtype = args->Get("dtype", "fp32");
    auto lra = lra::EngineLraClassifier::Load(args->Get("model"), lra_options);
    if (!lra.ok()) return fail(lra.status());
    if (!quiet) {
      std::fprintf(stderr, "model %s (%s, %s fp32)\n", args->Get("model").c_str(),
                   (*lra)->info().family.c_str(), (*lra)->info().backend.c_str());
    }
    return EvaluateAndReport(**lra, *task_names, eval_options, args->Get("model"), *args, quiet);
  }

  // Token-level tasks (mqar) need no tokenizer, and checkpoints trained on them have none.
  bool token_level_only = true;
  for (const std::string& name : *task_names) {
    auto task = CreateTask(name);
    if (!task.ok()) return fail(task.status());
    token_level_only = token_level_only && (*task)->output_type() == RequestType::kTokenTargets;
  }
  std::string tokenizer_path = args->Get("tokenizer");
  const bool no_tokenizer =
      tokenizer_path == "none" || (tokenizer_path.empty() && token_level_only);
  if (no_tokenizer) {
    tokenizer_path = "";
    lm_options.tokenizer_name = "none";
  }
  auto opened = OpenModelAndTokenizer(args->Get("model"), tokenizer_path,
                                      args->Get("device", "cpu"), args->Get("dtype", "fp32"),
                                      static_cast<int>(*threads), /*load_tokenizer=*/!no_tokenizer);
  if (!opened.ok()) return fail(opened.status());
  if (no_tokenizer) {
    opened->tokenizer =
        MakeTokenOnlyTokenizer(static_cast<int32_t>(opened->model->info().vocab_size));
  }
  lm_options.model_hash = opened->checkpoint->ContentHash();
  EngineLanguageModel lm(opened->model.get(), opened->tokenizer.get(), lm_options);
  if (!quiet) {
    std::fprintf(stderr, "model %s (%s, %s %s), max_length %lld, bos %s, reuse %s\n",
                 lm_options.model_name.c_str(), lm.info().family.c_str(), lm.info().backend.c_str(),
                 lm.info().dtype.c_str(), static_cast<long long>(lm.max_length()),
                 lm.info().bos_regime.c_str(), lm_options.context_reuse ? "on" : "off");
  }
  const std::string header = lm_options.model_name + " (bos=" + lm.info().bos_regime +
                             ",max_length=" + std::to_string(lm.max_length()) + ")";
  return EvaluateAndReport(lm, *task_names, eval_options, header, *args, quiet);
}

}  // namespace
}  // namespace hgeval::tasks

int main(int argc, char** argv) { return hgeval::tasks::Run(argc, argv); }
