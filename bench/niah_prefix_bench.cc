// NIAH prefix-reuse benchmark: tokens fed and wall time of a NIAH sweep with and without
// prefix reuse, on the CPU with a small model, and the reduction factor.
//
//   (from the repository root; the default paths are relative to it)
//   niah_prefix_bench --preset paper --max_cells 40 --out niah_prefix_bench.json
//
// Both sweeps run the same cells (all of them, or --max_cells spread evenly over the grid)
// and must produce the same tokens. Token counts for the whole grid are exact (computed
// from the prompt layouts); the whole-grid times are ESTIMATES when --max_cells limits the
// run: a linear model t = a * prefill_tokens + b * decode_tokens fitted to the two
// measured runs (same decode work, different prefill work).
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "tasks/niah/context.h"
#include "tasks/niah/grid.h"
#include "tasks/niah/haystack.h"
#include "tasks/niah/sweep.h"

ABSL_FLAG(std::string, model, "tests/golden/hgrn2", "Model folder or llama2.c .bin");
ABSL_FLAG(std::string, tokenizer, "data/models/stories260K/tok512.bin",
          "Tokenizer (the golden models use the 512-token llama2.c vocabulary)");
ABSL_FLAG(std::string, essays, "data/niah/PaulGrahamEssays", "Haystack folder");
ABSL_FLAG(std::string, preset, "paper", "Grid preset (paper, quick)");
ABSL_FLAG(std::string, mode, "easy", "easy or standard");
ABSL_FLAG(int64_t, max_cells, 40, "Cells run per sweep (0 = the whole grid)");
ABSL_FLAG(int, max_new_tokens, 32, "Greedy tokens per cell");
ABSL_FLAG(int, max_batch, 8, "Cells decoded together");
ABSL_FLAG(int, threads, 0, "CPU threads (0 = all)");
ABSL_FLAG(std::string, out, "", "JSON output file (default: stdout only)");

namespace hgeval::niah {
namespace {

using Json = nlohmann::json;

Json StatsJson(const NiahSweepStats& s) {
  return Json{{"cells_run", s.cells_run},
              {"prefill_tokens_fed", s.prefill_tokens_fed},
              {"decode_tokens_fed", s.decode_tokens_fed},
              {"tokens_fed", s.prefill_tokens_fed + s.decode_tokens_fed},
              {"snapshots", s.snapshots},
              {"wall_seconds", s.wall_seconds}};
}

absl::Status Run() {
  LoadOptions load;
  load.threads = absl::GetFlag(FLAGS_threads);
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, LoadModel(absl::GetFlag(FLAGS_model), load));
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer,
                      LoadTokenizer(absl::GetFlag(FLAGS_tokenizer)));
  NiahOptions options;
  HG_ASSIGN_OR_RETURN(options.mode, ParseNiahMode(absl::GetFlag(FLAGS_mode)));
  HG_ASSIGN_OR_RETURN(options.grid, NiahGridPreset(absl::GetFlag(FLAGS_preset)));
  options.essays_dir = absl::GetFlag(FLAGS_essays);
  options.max_new_tokens = absl::GetFlag(FLAGS_max_new_tokens);
  options.max_batch = absl::GetFlag(FLAGS_max_batch);
  options.max_cells = absl::GetFlag(FLAGS_max_cells);

  // Exact whole-grid token counts from the layouts.
  HG_ASSIGN_OR_RETURN(std::vector<Essay> essays, ReadHaystackEssays(options.essays_dir));
  HG_ASSIGN_OR_RETURN(std::vector<int32_t> haystack,
                      BuildHaystackTokens(*tokenizer, essays, options.grid.lengths.back()));
  HG_ASSIGN_OR_RETURN(
      NiahContextBuilder builder,
      NiahContextBuilder::Create(*tokenizer, haystack, DefaultNiahTexts(options.mode),
                                 options.buffer_tokens));
  int64_t grid_naive = 0, grid_rest = 0, grid_max_prefix = 0, grid_cells = 0;
  for (int64_t length : options.grid.lengths) {
    for (double depth : options.grid.depths) {
      HG_ASSIGN_OR_RETURN(NiahCellLayout layout, builder.Layout(length, depth));
      const int64_t rest = static_cast<int64_t>(builder.RestTokens(layout).size());
      grid_naive += builder.prefix_offset() + layout.insertion_point + rest;
      grid_rest += rest;
      grid_max_prefix =
          std::max<int64_t>(grid_max_prefix, builder.prefix_offset() + layout.insertion_point);
      ++grid_cells;
    }
  }
  const int64_t grid_reuse = grid_max_prefix + grid_rest;

  std::fprintf(stderr, "niah_prefix_bench: %s grid (%lld cells), running %lld cells twice\n",
               absl::GetFlag(FLAGS_preset).c_str(), static_cast<long long>(grid_cells),
               static_cast<long long>(options.max_cells > 0 ? options.max_cells : grid_cells));
  options.prefix_reuse = true;
  HG_ASSIGN_OR_RETURN(NiahResult reuse, RunNiahSweep(*model, *tokenizer, options));
  std::fprintf(stderr, "  prefix reuse: %.2f s\n", reuse.stats.wall_seconds);
  options.prefix_reuse = false;
  HG_ASSIGN_OR_RETURN(NiahResult naive, RunNiahSweep(*model, *tokenizer, options));
  std::fprintf(stderr, "  naive:        %.2f s\n", naive.stats.wall_seconds);

  bool identical = true;
  for (size_t i = 0; i < reuse.cells.size(); ++i) {
    identical = identical && reuse.cells[i].generated_tokens == naive.cells[i].generated_tokens;
  }

  // t = a * prefill + b * decode, from the two runs (same decode work).
  const double dp =
      static_cast<double>(naive.stats.prefill_tokens_fed - reuse.stats.prefill_tokens_fed);
  const double a = dp > 0 ? (naive.stats.wall_seconds - reuse.stats.wall_seconds) / dp : 0.0;
  const double decode = static_cast<double>(reuse.stats.decode_tokens_fed);
  const double b =
      decode > 0
          ? std::max(0.0, reuse.stats.wall_seconds - a * reuse.stats.prefill_tokens_fed) / decode
          : 0.0;
  const double grid_decode = decode * grid_cells / std::max<int64_t>(1, reuse.stats.cells_run);
  const bool whole_grid = reuse.stats.cells_run == grid_cells;
  const double est_reuse_s =
      whole_grid ? reuse.stats.wall_seconds : a * grid_reuse + b * grid_decode;
  const double est_naive_s =
      whole_grid ? naive.stats.wall_seconds : a * grid_naive + b * grid_decode;

  Json doc{
      {"benchmark", "niah_prefix_reuse"},
      {"model", absl::GetFlag(FLAGS_model)},
      {"tokenizer", absl::GetFlag(FLAGS_tokenizer)},
      {"backend", model->info().backend},
      {"preset", absl::GetFlag(FLAGS_preset)},
      {"mode", absl::GetFlag(FLAGS_mode)},
      {"max_new_tokens", options.max_new_tokens},
      {"grid_cells", grid_cells},
      {"measured",
       {{"cells", reuse.stats.cells_run},
        {"prefix_reuse", StatsJson(reuse.stats)},
        {"naive", StatsJson(naive.stats)},
        {"identical_tokens", identical},
        {"prefill_token_reduction", static_cast<double>(naive.stats.prefill_tokens_fed) /
                                        std::max<int64_t>(1, reuse.stats.prefill_tokens_fed)},
        {"time_reduction", naive.stats.wall_seconds / std::max(1e-9, reuse.stats.wall_seconds)}}},
      {"whole_grid",
       {{"exact_token_counts", true},
        {"prefix_reuse_prefill_tokens", grid_reuse},
        {"naive_prefill_tokens", grid_naive},
        {"prefill_token_reduction", static_cast<double>(grid_naive) / grid_reuse},
        {"decode_tokens_estimate", grid_decode},
        {"times_are_estimates", !whole_grid},
        {"prefix_reuse_seconds", est_reuse_s},
        {"naive_seconds", est_naive_s},
        {"time_reduction", est_naive_s / std::max(1e-9, est_reuse_s)},
        {"fit_seconds_per_prefill_token", a},
        {"fit_seconds_per_decode_token", b}}}};
  const std::string text = doc.dump(2);
  std::printf("%s\n", text.c_str());
  if (!absl::GetFlag(FLAGS_out).empty()) {
    std::ofstream out(absl::GetFlag(FLAGS_out));
    out << text << "\n";
    if (!out) return absl::InternalError("cannot write " + absl::GetFlag(FLAGS_out));
  }
  return identical
             ? absl::OkStatus()
             : absl::InternalError("prefix reuse and naive sweeps generated different tokens");
}

}  // namespace
}  // namespace hgeval::niah

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = hgeval::niah::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "niah_prefix_bench: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
