#include "tasks/niah/niah_flags.h"

#include "absl/flags/flag.h"
#include "engine/cli/generation_flags.h"
#include "engine/util/status_macros.h"
#include "tasks/niah/context.h"
#include "tasks/niah/grid.h"

ABSL_FLAG(std::string, mode, "easy",
          "niah: easy (question + answer in the needle) or standard (answer only).");
ABSL_FLAG(std::string, preset, "quick",
          "niah: grid preset, quick (6x6 up to 4K) or paper (35x35, 1K-16K).");
ABSL_FLAG(std::string, lengths, "",
          "niah: comma-separated context lengths in tokens (replace the preset's).");
ABSL_FLAG(std::string, depths, "", "niah: comma-separated depth percents (replace the preset's).");
ABSL_FLAG(int64_t, buffer, 200, "niah: tokens kept free of the context (Kamradt's buffer).");
ABSL_FLAG(std::string, scorer, "rouge1", "niah: cell score, rouge1 (10 x ROUGE-1 F) or keyphrase.");
ABSL_FLAG(bool, stemmer, true,
          "niah: Porter-stem ROUGE tokens (rouge_score use_stemmer=True); --nostemmer: none.");
ABSL_FLAG(double, threshold, 5.0, "niah: success = score >= threshold.");
ABSL_FLAG(double, depth_alpha, 1.01, "niah: depth weight ratio of the weighted accuracy.");
ABSL_FLAG(double, length_alpha, 1.01, "niah: length weight ratio of the weighted accuracy.");
ABSL_FLAG(bool, prefix_reuse, true,
          "niah: feed the haystack once with state snapshots (--noprefix_reuse: every prompt "
          "whole; same results).");
ABSL_FLAG(int, max_batch, 0,
          "niah: cells decoded together while their states fit the memory budget (0: 32 on "
          "CUDA, 8 on the CPU).");
ABSL_FLAG(int64_t, max_cells, 0, "niah: run only this many cells, spread over the grid (0: all).");
ABSL_FLAG(int64_t, training_length, -1,
          "niah: dashed heatmap line at this length (-1: the model's max_position_embeddings, "
          "even with --max_context; 0: none).");
ABSL_FLAG(std::string, output_dir, "niah_out",
          "niah: output folder (niah_results.json, niah_grid.csv, niah_heatmap.png).");

namespace hgeval::niah {

absl::StatusOr<NiahOptions> NiahOptionsFromFlags() {
  NiahOptions options;
  HG_ASSIGN_OR_RETURN(options.mode, ParseNiahMode(absl::GetFlag(FLAGS_mode)));
  HG_ASSIGN_OR_RETURN(options.grid, NiahGridPreset(absl::GetFlag(FLAGS_preset)));
  if (!absl::GetFlag(FLAGS_lengths).empty()) {
    HG_ASSIGN_OR_RETURN(options.grid.lengths, ParseLengthList(absl::GetFlag(FLAGS_lengths)));
  }
  if (!absl::GetFlag(FLAGS_depths).empty()) {
    HG_ASSIGN_OR_RETURN(options.grid.depths, ParseDepthList(absl::GetFlag(FLAGS_depths)));
  }
  options.buffer_tokens = absl::GetFlag(FLAGS_buffer);
  // The generation flags (engine/cli), with a cell's defaults: 32 tokens, a newline ends
  // the answer.
  const NiahOptions defaults;
  HG_ASSIGN_OR_RETURN(options.max_new_tokens, cli::MaxTokensFromFlags(defaults.max_new_tokens));
  options.stop_strings = cli::UntilFromFlags(defaults.stop_strings);
  options.ignore_eos = cli::IgnoreEosFromFlags();
  HG_ASSIGN_OR_RETURN(options.scorer, ParseNiahScorer(absl::GetFlag(FLAGS_scorer)));
  options.rouge_use_stemmer = absl::GetFlag(FLAGS_stemmer);
  options.metric_options.threshold = absl::GetFlag(FLAGS_threshold);
  options.metric_options.depth_alpha = absl::GetFlag(FLAGS_depth_alpha);
  options.metric_options.length_alpha = absl::GetFlag(FLAGS_length_alpha);
  options.prefix_reuse = absl::GetFlag(FLAGS_prefix_reuse);
  options.max_batch = absl::GetFlag(FLAGS_max_batch);
  options.max_cells = absl::GetFlag(FLAGS_max_cells);
  return options;
}

std::optional<int64_t> TrainingLengthFromFlags() {
  const int64_t length = absl::GetFlag(FLAGS_training_length);
  if (length < 0) return std::nullopt;
  return length;
}

std::string OutputDirFromFlags() { return absl::GetFlag(FLAGS_output_dir); }

}  // namespace hgeval::niah
