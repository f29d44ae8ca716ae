// hgeval-niah: Needle-in-a-Haystack sweep of one model, in process.
//
//   hgeval-niah --model data/models/stories260K/stories260K.bin \
//       --tokenizer data/models/stories260K/tok512.bin --mode easy --preset quick \
//       --output_dir out/niah
//
// Writes niah_results.json, niah_grid.csv and niah_heatmap.png to --output_dir.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/cli/command_line.h"
#include "engine/cli/common_flags.h"
#include "engine/cli/model_flags.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/status_macros.h"
#include "tasks/harness/progress_bar.h"
#include "tasks/niah/context.h"
#include "tasks/niah/grid.h"
#include "tasks/niah/heatmap/niah_heatmap.h"
#include "tasks/niah/niah_flags.h"
#include "tasks/niah/output.h"
#include "tasks/niah/sweep.h"

ABSL_FLAG(std::string, model_name, "", "Name in the title and JSON (default: file name).");
ABSL_FLAG(std::string, essays, "",
          "Haystack folder (default: data/niah/PaulGrahamEssays of the source tree).");

namespace hgeval::niah {
namespace {

std::string DefaultEssaysDir() {
  const std::string local = "data/niah/PaulGrahamEssays";
  if (std::filesystem::is_directory(local)) return local;
  return std::string(HGEVAL_SOURCE_DIR) + "/" + local;
}

absl::Status Run() {
  HG_ASSIGN_OR_RETURN(const std::string model_path, cli::ModelPathFromFlags());
  HG_ASSIGN_OR_RETURN(NiahOptions options, NiahOptionsFromFlags());
  options.essays_dir =
      absl::GetFlag(FLAGS_essays).empty() ? DefaultEssaysDir() : absl::GetFlag(FLAGS_essays);
  options.model_name = absl::GetFlag(FLAGS_model_name).empty()
                           ? std::filesystem::path(model_path).stem().string()
                           : absl::GetFlag(FLAGS_model_name);

  HG_ASSIGN_OR_RETURN(const LoadOptions load, cli::LoadOptionsFromFlags());
  // The checkpoint stays open beside the model; its content hash goes into the results,
  // the same model_hash every route records.
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, OpenModelCheckpoint(model_path));
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, BuildModel(*checkpoint, load));
  options.model_hash = checkpoint->ContentHash();
  const std::string tokenizer_path =
      absl::GetFlag(FLAGS_tokenizer).empty() ? model_path : absl::GetFlag(FLAGS_tokenizer);
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tokenizer, LoadTokenizer(tokenizer_path));
  // The training length, not a --max_context override: the line marks where
  // extrapolation starts.
  options.training_length =
      TrainingLengthFromFlags().value_or(model->config().max_position_embeddings);

  std::fprintf(stderr, "hgeval-niah: %s, %s mode, %zu x %zu cells, prefix reuse %s\n",
               options.model_name.c_str(), std::string(NiahModeName(options.mode)).c_str(),
               options.grid.lengths.size(), options.grid.depths.size(),
               options.prefix_reuse ? "on" : "off");
  tasks::ProgressBar bar(cli::ProgressFromFlags());
  HG_ASSIGN_OR_RETURN(NiahResult result,
                      RunNiahSweep(*model, *tokenizer, options, [&](int64_t done, int64_t total) {
                        bar.Update({.done = done, .total = total, .unit = "cells"});
                      }));
  bar.Finish();

  const std::string out = OutputDirFromFlags();
  HG_RETURN_IF_ERROR(WriteNiahOutputs(result, out));
  heatmap::HeatmapOptions heatmap_options;
  heatmap_options.title = NiahHeatmapTitle(options.model_name, NiahModeName(options.mode));
  heatmap_options.subtitle = heatmap::NiahMetricsSubtitle(result.metrics);
  heatmap_options.training_length = options.training_length;
  HG_RETURN_IF_ERROR(heatmap::WriteNiahHeatmapPng(
      result.grid, heatmap_options, (std::filesystem::path(out) / kNiahHeatmapPng).string()));
  std::printf(
      "weighted_avg_acc %.4f  niah_score %.4f  avg_acc %.4f  cells %lld  prefill tokens %lld "
      "(naive %lld)  decode tokens %lld  %.2f s\n",
      result.metrics.weighted_average_accuracy, result.metrics.niah_score,
      result.metrics.average_accuracy, static_cast<long long>(result.stats.cells_run),
      static_cast<long long>(result.stats.prefill_tokens_fed),
      static_cast<long long>(result.stats.naive_prefill_tokens),
      static_cast<long long>(result.stats.decode_tokens_fed), result.stats.wall_seconds);
  std::printf("wrote %s/{%s,%s,%s}\n", out.c_str(), kNiahResultsJson, kNiahGridCsv,
              kNiahHeatmapPng);
  return absl::OkStatus();
}

}  // namespace
}  // namespace hgeval::niah

int main(int argc, char** argv) {
  hgeval::cli::ParseCommandLine(argc, argv,
                                "hgeval-niah: a Needle-in-a-Haystack sweep of one model, in "
                                "process.\nUsage: hgeval-niah --model M [flags] --output_dir DIR");
  const absl::Status status = hgeval::niah::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "hgeval-niah: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
