// Times the NIAH `paper` grid (issue 5: 35 x 35 cells, 1K-16K tokens, easy mode, prefix
// reuse, 32 greedy new tokens) on the CUDA backend, through niah::RunNiahSweep exactly as
// hgeval-niah and the server job run it, for random-weight HGRN2-1.3B and LLaMA-1.3B shapes
// with the Llama-2 tokenizer. Issue 5's goal: <= 60 s for HGRN2-1.3B.
//
// Random weights are for timing only: the program refuses to run without
// --random_weights. The generated text is garbage, so by default no stop string or EOS
// ends a cell early: every cell decodes all max_new_tokens tokens, an upper bound on the
// decode work of a trained model (which stops at the answer's newline).
//
// The model is wrapped to time its Forward calls: calls whose items all feed one token are
// decode steps, the rest are prefill (the haystack pass and each cell's needle + rest of
// context + question); what remains of the sweep's wall time is snapshots, sampling and
// bookkeeping on the host.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/cuda/random_checkpoint.h"
#include "bench/cuda/timed_model.h"
#include "bench/cuda/tool_main.h"
#include "engine/cuda/cuda_model.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/memory_budget.h"
#include "engine/util/sha256.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "tasks/niah/context.h"
#include "tasks/niah/grid.h"
#include "tasks/niah/sweep.h"

ABSL_FLAG(bool, random_weights, false,
          "required: acknowledge that the models get random weights (timing only)");
ABSL_FLAG(std::string, models, "hgrn2,llama", "comma-separated: hgrn2, llama, tnl");
ABSL_FLAG(std::string, dtype, "bf16", "fp32 or bf16");
ABSL_FLAG(std::string, device_memory, "",
          "GPU memory budget (20GiB, 0.5, 50%; empty: free memory less a margin)");
ABSL_FLAG(std::string, device, "cuda",
          "cuda or cuda:N; cpu (with --dtype fp32, few --layers and --max_cells) only to "
          "check the program itself without a GPU");
ABSL_FLAG(int, layers, 24, "layers (24 for the 1.3B shapes; fewer for a quick look)");
ABSL_FLAG(std::string, preset, "paper", "NIAH grid preset (paper: 35 x 35, 1K-16K)");
ABSL_FLAG(std::string, mode, "easy", "easy or standard");
ABSL_FLAG(std::string, max_batch, "0",
          "comma-separated NIAH max_batch values, one sweep each (0: what hgeval-niah and "
          "server jobs use, DefaultNiahMaxBatch: 32 on CUDA)");
ABSL_FLAG(std::string, llama_max_batch, "0",
          "max_batch values for the LLaMA shape (0: DefaultNiahMaxBatch, 32; the sweep bounds "
          "a batch by the memory budget's bytes too)");
ABSL_FLAG(int64_t, llama_training_length, 2048,
          "LLaMA config max_position_embeddings (its training length)");
ABSL_FLAG(int64_t, llama_max_context, 16384,
          "LoadOptions::max_context for the LLaMA shape (RoPE extrapolation past the "
          "training length; the paper grid needs ~16.1K positions)");
ABSL_FLAG(int, max_new_tokens, 32, "greedy tokens per cell");
ABSL_FLAG(bool, stops, false,
          "stop at the default stop string and EOS (random weights: off, so every cell "
          "decodes max_new_tokens)");
ABSL_FLAG(int64_t, max_cells, 0, "run only this many cells, spread over the grid (0: all)");
ABSL_FLAG(std::string, tokenizer, "", "tokenizer (default <source>/data/tokenizers/llama-2)");
ABSL_FLAG(std::string, essays, "", "haystack folder (default <source>/data/niah/PaulGrahamEssays)");
ABSL_FLAG(bool, warmup, true,
          "run one untimed batch first (CUDA graph capture, cuBLAS heuristics, allocator)");
ABSL_FLAG(std::string, out, "", "JSON output path (default: stdout only)");

namespace hgeval {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The checkout: $HGEVAL_SOURCE_DIR (the GPU machine's copy), else the configured tree.
std::string SourceDir() {
  const char* env = std::getenv("HGEVAL_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? env : HGEVAL_SOURCE_DIR;
}

// Forwards to the real model and times its Forward calls by kind.
void WriteReport(const nlohmann::json& report) {
  if (!absl::GetFlag(FLAGS_out).empty()) {
    std::ofstream(absl::GetFlag(FLAGS_out)) << report.dump(2) << "\n";
  }
}

absl::StatusOr<std::vector<int>> IntList(const std::string& text) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("not a batch size (0: the default, or a positive integer): '", part, "'"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Model>> BuildRandomModel(const std::string& family,
                                                        const LoadOptions& load,
                                                        int64_t tokenizer_vocab) {
  nlohmann::json cfg_json = bench::RandomModelConfig(family, absl::GetFlag(FLAGS_layers));
  if (bench::RandomModelHasKvCache(family)) {
    cfg_json["max_position_embeddings"] = absl::GetFlag(FLAGS_llama_training_length);
  }
  // TNL's own vocabulary is 64,000; the sweep's tokenizer decides it here (timing only).
  if (bench::RandomModelTakesTokenizerVocab(family)) cfg_json["vocab_size"] = tokenizer_vocab;
  return bench::BuildRandomModel(family, cfg_json, load);
}

absl::Status Run(nlohmann::json& report) {
  const std::string source = SourceDir();
  const std::string tokenizer_path = absl::GetFlag(FLAGS_tokenizer).empty()
                                         ? source + "/data/tokenizers/llama-2"
                                         : absl::GetFlag(FLAGS_tokenizer);
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(tokenizer_path));

  niah::NiahOptions base;
  HG_ASSIGN_OR_RETURN(base.mode, niah::ParseNiahMode(absl::GetFlag(FLAGS_mode)));
  HG_ASSIGN_OR_RETURN(base.grid, niah::NiahGridPreset(absl::GetFlag(FLAGS_preset)));
  base.essays_dir = absl::GetFlag(FLAGS_essays).empty() ? source + "/data/niah/PaulGrahamEssays"
                                                        : absl::GetFlag(FLAGS_essays);
  base.max_new_tokens = absl::GetFlag(FLAGS_max_new_tokens);
  if (!absl::GetFlag(FLAGS_stops)) {
    base.stop_strings.clear();
    base.ignore_eos = true;
  }
  base.prefix_reuse = true;
  base.max_cells = absl::GetFlag(FLAGS_max_cells);

  report["dtype"] = absl::GetFlag(FLAGS_dtype);
  report["layers"] = absl::GetFlag(FLAGS_layers);
  report["weights"] = "random (timing only)";
  report["tokenizer"] = {{"path", tokenizer_path},
                         {"kind", std::string(tokenizer->kind())},
                         {"vocab_size", tokenizer->vocab_size()}};
  report["sweep"] = {{"preset", absl::GetFlag(FLAGS_preset)},
                     {"mode", absl::GetFlag(FLAGS_mode)},
                     {"lengths", base.grid.lengths.size()},
                     {"depths", base.grid.depths.size()},
                     {"prefix_reuse", true},
                     {"max_new_tokens", base.max_new_tokens},
                     {"stop_strings_and_eos", absl::GetFlag(FLAGS_stops)}};

  for (const std::string& family :
       std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_models), ','))) {
    if (!bench::IsRandomModelFamily(family)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown model '", family, "'"));
    }
    LoadOptions load;
    load.device = absl::GetFlag(FLAGS_device);
    load.dtype = absl::GetFlag(FLAGS_dtype);
    load.device_memory = absl::GetFlag(FLAGS_device_memory);
    if (bench::RandomModelHasKvCache(family)) {
      load.max_context = absl::GetFlag(FLAGS_llama_max_context);
    }
    const auto tb = Clock::now();
    HG_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                        BuildRandomModel(family, load, tokenizer->vocab_size()));
    auto* cuda_model = dynamic_cast<cuda::CudaModel*>(model.get());  // null on the CPU
    const std::string device_name = cuda_model != nullptr ? cuda_model->device_name() : "cpu";
    report["gpu"] = device_name;
    std::fprintf(stderr, "[%s] built in %.1f s on %s, %lld params, max_context %lld\n",
                 family.c_str(), Seconds(tb, Clock::now()), device_name.c_str(),
                 static_cast<long long>(model->info().num_parameters),
                 static_cast<long long>(model->info().max_context));
    if (tokenizer->vocab_size() != model->info().vocab_size) {
      return absl::FailedPreconditionError(
          absl::StrCat("tokenizer vocabulary ", tokenizer->vocab_size(), " != model vocabulary ",
                       model->info().vocab_size));
    }
    nlohmann::json model_report = {
        {"params", model->info().num_parameters},
        {"max_context", model->info().max_context},
        {"max_position_embeddings", model->config().max_position_embeddings}};
    HG_ASSIGN_OR_RETURN(
        std::vector<int> batches,
        IntList(absl::GetFlag(bench::RandomModelHasKvCache(family) ? FLAGS_llama_max_batch
                                                                   : FLAGS_max_batch)));
    bench::TimedModel timed(model.get());
    for (int& max_batch : batches) {
      if (max_batch == 0) max_batch = niah::DefaultNiahMaxBatch(model->info());
    }
    if (absl::GetFlag(FLAGS_warmup)) {
      niah::NiahOptions warm = base;
      warm.max_cells = batches.front();
      warm.max_batch = batches.front();
      HG_RETURN_IF_ERROR(niah::RunNiahSweep(timed, *tokenizer, warm).status());
    }
    for (int max_batch : batches) {
      niah::NiahOptions options = base;
      options.max_batch = max_batch;
      options.model_name = bench::RandomModelLabel(family);
      timed.ResetTimes();
      if (cuda_model != nullptr) cuda_model->ResetPeakDeviceBytes();
      MemoryBudget* budget = model->memory_budget();
      if (budget != nullptr) budget->ResetPeak();
      const auto t0 = Clock::now();
      HG_ASSIGN_OR_RETURN(niah::NiahResult result, niah::RunNiahSweep(timed, *tokenizer, options));
      const double total = Seconds(t0, Clock::now());
      const niah::NiahSweepStats& s = result.stats;
      const bench::TimedModel::Times& t = timed.times();
      int64_t full_length = 0;
      for (const niah::NiahCellResult& cell : result.cells) {
        if (cell.ran && static_cast<int>(cell.generated_tokens.size()) == base.max_new_tokens) {
          ++full_length;
        }
      }
      // Every cell's generated ids, in grid order: two runs (say, two budgets) gave the same
      // answers when these agree.
      std::string generated;
      for (const niah::NiahCellResult& cell : result.cells) {
        generated.append(reinterpret_cast<const char*>(cell.generated_tokens.data()),
                         cell.generated_tokens.size() * sizeof(int32_t));
        generated.push_back(';');
      }
      nlohmann::json run = {
          {"max_batch", max_batch},
          {"batches", s.batches},
          {"generated_sha256", Sha256Hex(generated)},
          {"memory_budget_bytes", budget != nullptr ? budget->limit() : 0},
          {"peak_budget_bytes", budget != nullptr ? budget->peak() : 0},
          {"cells", s.cells_run},
          {"cells_decoding_all_new_tokens", full_length},
          {"haystack_tokens", s.haystack_tokens},
          {"prefill_tokens_fed", s.prefill_tokens_fed},
          {"naive_prefill_tokens", s.naive_prefill_tokens},
          {"decode_tokens_fed", s.decode_tokens_fed},
          {"snapshots", s.snapshots},
          {"sweep_wall_seconds", s.wall_seconds},
          {"total_seconds_with_haystack_encoding", total},
          {"seconds_per_cell", s.cells_run > 0 ? s.wall_seconds / s.cells_run : 0.0},
          {"prefill_seconds", t.prefill_seconds},
          {"prefill_calls", t.prefill_calls},
          {"prefill_tok_per_s", t.prefill_seconds > 0 ? t.prefill_tokens / t.prefill_seconds : 0},
          {"decode_seconds", t.decode_seconds},
          {"decode_steps", t.decode_steps},
          {"decode_rows", t.decode_rows},
          {"host_and_snapshot_seconds", s.wall_seconds - t.prefill_seconds - t.decode_seconds},
          {"peak_device_gib",
           cuda_model != nullptr ? cuda_model->peak_device_bytes() / double(1ull << 30) : 0.0},
          {"goal_60s_met", s.wall_seconds <= 60.0}};
      std::fprintf(stderr,
                   "[%s] max_batch %d: %lld cells in %.1f s (%.3f s/cell): prefill %.1f s "
                   "(%lld tokens, %.0f tok/s), decode %.1f s (%lld steps), other %.1f s, "
                   "peak %.1f GiB\n",
                   family.c_str(), max_batch, static_cast<long long>(s.cells_run), s.wall_seconds,
                   run["seconds_per_cell"].get<double>(), t.prefill_seconds,
                   static_cast<long long>(t.prefill_tokens), run["prefill_tok_per_s"].get<double>(),
                   t.decode_seconds, static_cast<long long>(t.decode_steps),
                   run["host_and_snapshot_seconds"].get<double>(),
                   run["peak_device_gib"].get<double>());
      model_report["runs"].push_back(run);
      report["models"][family] = model_report;
      WriteReport(report);  // after every sweep: a cut-off run keeps what it measured
    }
    report["models"][family] = model_report;
  }
  return absl::OkStatus();
}

int ToolMain(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!absl::GetFlag(FLAGS_random_weights)) {
    std::fprintf(stderr,
                 "niah_cuda_bench builds models with RANDOM weights, for timing only; pass "
                 "--random_weights to acknowledge\n");
    return 2;
  }
  if (absl::GetFlag(FLAGS_device) != "cpu" && !hgeval::CudaAvailable()) {
    std::fprintf(stderr, "niah_cuda_bench: no CUDA GPU visible (no driver or no device)\n");
    return 1;
  }
  nlohmann::json report;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  report["date"] = date;
  const absl::Status status = hgeval::Run(report);
  std::printf("%s\n", report.dump(2).c_str());
  hgeval::WriteReport(report);
  if (!status.ok()) {
    std::fprintf(stderr, "niah_cuda_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace hgeval

int main(int argc, char** argv) {
  return hgeval::bench::RunToolMain("niah_cuda_bench",
                                    [&] { return hgeval::ToolMain(argc, argv); });
}
