// hgeval-niah: Needle-in-a-Haystack sweep of one model, in process.
//
//   hgeval-niah --model data/models/stories260K/stories260K.bin \
//       --tokenizer data/models/stories260K/tok512.bin --mode easy --preset quick \
//       --out out/niah
//
// Writes <out>/niah_results.json, <out>/niah_grid.csv and <out>/niah_heatmap.png.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/status_macros.h"
#include "tasks/niah/context.h"
#include "tasks/niah/grid.h"
#include "tasks/niah/heatmap/niah_heatmap.h"
#include "tasks/niah/output.h"
#include "tasks/niah/sweep.h"

ABSL_FLAG(std::string, model, "", "Model: Hugging Face folder or llama2.c .bin");
ABSL_FLAG(std::string, tokenizer, "", "Tokenizer file or folder (default: the model folder)");
ABSL_FLAG(std::string, model_name, "", "Name in the title and JSON (default: file name)");
ABSL_FLAG(std::string, mode, "easy", "easy (question + answer in the needle) or standard");
ABSL_FLAG(std::string, preset, "quick", "Grid preset: paper (35x35, 1K-16K) or quick (6x6)");
ABSL_FLAG(std::string, lengths, "", "Comma-separated context lengths (overrides the preset)");
ABSL_FLAG(std::string, depths, "", "Comma-separated depth percents (overrides the preset)");
ABSL_FLAG(std::string, essays, "",
          "Haystack folder (default: data/niah/PaulGrahamEssays of the source tree)");
ABSL_FLAG(int64_t, buffer, 200, "Tokens kept free of the context (Kamradt's buffer)");
ABSL_FLAG(int, max_new_tokens, 32, "Greedy tokens generated per cell");
ABSL_FLAG(std::string, stop, "\\n",
          "Comma-separated stop strings (\\n and \\t escapes); empty for none");
ABSL_FLAG(bool, stop_at_eos, true, "Stop at the EOS token");
ABSL_FLAG(std::string, scorer, "rouge1", "Cell score: rouge1 (10 x ROUGE-1 F) or keyphrase");
ABSL_FLAG(bool, stemmer, true, "Porter-stem ROUGE tokens (as rouge_score use_stemmer=True)");
ABSL_FLAG(double, threshold, 5.0, "Success = score >= threshold");
ABSL_FLAG(double, depth_alpha, 1.01, "Depth weight ratio of the weighted accuracy");
ABSL_FLAG(double, length_alpha, 1.01, "Length weight ratio of the weighted accuracy");
ABSL_FLAG(bool, prefix_reuse, true, "Feed the haystack once with snapshots (else per cell)");
ABSL_FLAG(int, max_batch, 0, "Cells decoded together (0: 32 for recurrent models on CUDA, else 8)");
ABSL_FLAG(int64_t, max_cells, 0, "Run only this many cells, spread over the grid (0 = all)");
ABSL_FLAG(int64_t, training_length, -1,
          "Dashed line on the heatmap (-1: the config's max_position_embeddings, i.e. the "
          "training length, even with --max_context; 0: none)");
ABSL_FLAG(int64_t, max_context, 0,
          "LLaMA: accept prompts up to this many positions (0: max_position_embeddings). "
          "Lets a LLaMA run past its training length with RoPE extrapolation, as the "
          "Scaling-Laws heatmaps do; recurrent models ignore it");
ABSL_FLAG(std::string, device, "cpu", "cpu, cuda or cuda:N");
ABSL_FLAG(std::string, dtype, "fp32", "fp32 or bf16 (CUDA)");
ABSL_FLAG(int, threads, 0, "CPU threads (0 = all)");
ABSL_FLAG(std::string, out, "niah_out", "Output folder");

namespace hgeval::niah {
namespace {

std::string Unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char c = s[++i];
      out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string DefaultEssaysDir() {
  const std::string local = "data/niah/PaulGrahamEssays";
  if (std::filesystem::is_directory(local)) return local;
  return std::string(HGEVAL_SOURCE_DIR) + "/" + local;
}

absl::Status Run() {
  const std::string model_path = absl::GetFlag(FLAGS_model);
  if (model_path.empty()) return absl::InvalidArgumentError("--model is required");
  NiahOptions options;
  HG_ASSIGN_OR_RETURN(options.mode, ParseNiahMode(absl::GetFlag(FLAGS_mode)));
  HG_ASSIGN_OR_RETURN(options.grid, NiahGridPreset(absl::GetFlag(FLAGS_preset)));
  if (!absl::GetFlag(FLAGS_lengths).empty()) {
    HG_ASSIGN_OR_RETURN(options.grid.lengths, ParseLengthList(absl::GetFlag(FLAGS_lengths)));
  }
  if (!absl::GetFlag(FLAGS_depths).empty()) {
    HG_ASSIGN_OR_RETURN(options.grid.depths, ParseDepthList(absl::GetFlag(FLAGS_depths)));
  }
  options.essays_dir =
      absl::GetFlag(FLAGS_essays).empty() ? DefaultEssaysDir() : absl::GetFlag(FLAGS_essays);
  options.buffer_tokens = absl::GetFlag(FLAGS_buffer);
  options.max_new_tokens = absl::GetFlag(FLAGS_max_new_tokens);
  options.stop_strings.clear();
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_stop), ',', absl::SkipEmpty())) {
    options.stop_strings.push_back(Unescape(std::string(s)));
  }
  options.stop_at_eos = absl::GetFlag(FLAGS_stop_at_eos);
  HG_ASSIGN_OR_RETURN(options.scorer, ParseNiahScorer(absl::GetFlag(FLAGS_scorer)));
  options.rouge_use_stemmer = absl::GetFlag(FLAGS_stemmer);
  options.metric_options.threshold = absl::GetFlag(FLAGS_threshold);
  options.metric_options.depth_alpha = absl::GetFlag(FLAGS_depth_alpha);
  options.metric_options.length_alpha = absl::GetFlag(FLAGS_length_alpha);
  options.prefix_reuse = absl::GetFlag(FLAGS_prefix_reuse);
  options.max_batch = absl::GetFlag(FLAGS_max_batch);
  options.max_cells = absl::GetFlag(FLAGS_max_cells);
  options.model_name = absl::GetFlag(FLAGS_model_name).empty()
                           ? std::filesystem::path(model_path).stem().string()
                           : absl::GetFlag(FLAGS_model_name);

  LoadOptions load;
  load.device = absl::GetFlag(FLAGS_device);
  load.dtype = absl::GetFlag(FLAGS_dtype);
  load.threads = absl::GetFlag(FLAGS_threads);
  load.max_context = absl::GetFlag(FLAGS_max_context);
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
  options.training_length = absl::GetFlag(FLAGS_training_length) >= 0
                                ? absl::GetFlag(FLAGS_training_length)
                                : model->config().max_position_embeddings;

  std::fprintf(stderr, "hgeval-niah: %s, %s mode, %zu x %zu cells, prefix reuse %s\n",
               options.model_name.c_str(), std::string(NiahModeName(options.mode)).c_str(),
               options.grid.lengths.size(), options.grid.depths.size(),
               options.prefix_reuse ? "on" : "off");
  HG_ASSIGN_OR_RETURN(
      NiahResult result, RunNiahSweep(*model, *tokenizer, options, [](int64_t done, int64_t total) {
        const int width = 40;
        const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
        std::fprintf(stderr, "\r[%s%s] %lld/%lld cells", std::string(filled, '#').c_str(),
                     std::string(width - filled, '.').c_str(), static_cast<long long>(done),
                     static_cast<long long>(total));
        if (done == total) std::fprintf(stderr, "\n");
      }));

  const std::string out = absl::GetFlag(FLAGS_out);
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
  absl::SetProgramUsageMessage("Needle-in-a-Haystack sweep: hgeval-niah --model M --out DIR");
  // --help lists this file's flags (absl matches only files named after the binary).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "niah/tools/niah_main.cc");
  };
  absl::SetFlagsUsageConfig(usage);
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = hgeval::niah::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "hgeval-niah: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
