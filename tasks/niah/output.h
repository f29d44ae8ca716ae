// NIAH outputs: the results JSON (settings, grid, per-cell records, metrics, stats) and the
// grid CSV (length, depth, score, success, generated text, ...). The heatmap PNG is drawn
// from the grid by client/heatmap (WriteNiahHeatmapPng).
#ifndef HGEVAL_TASKS_NIAH_OUTPUT_H_
#define HGEVAL_TASKS_NIAH_OUTPUT_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "metrics/niah_metrics.h"
#include "tasks/niah/sweep.h"

namespace hgeval::niah {

inline constexpr char kNiahResultsJson[] = "niah_results.json";
inline constexpr char kNiahGridCsv[] = "niah_grid.csv";
inline constexpr char kNiahHeatmapPng[] = "niah_heatmap.png";

std::string NiahResultToJson(const NiahResult& result);
std::string NiahResultToCsv(const NiahResult& result);

// Writes <dir>/niah_results.json and <dir>/niah_grid.csv (creating dir).
absl::Status WriteNiahOutputs(const NiahResult& result, const std::string& dir);

// What a client needs to draw the heatmap from a results JSON.
struct NiahHeatmapInput {
  std::string model_name;
  std::string mode;
  int64_t training_length = 0;
  metrics::NiahGridScores grid;  // null JSON scores (cells not run) become NaN
  metrics::NiahMetrics metrics;
};
absl::StatusOr<NiahHeatmapInput> ParseNiahResultsJson(std::string_view json_text);

// "Needle In A HayStack - easy mode - <model>" (the SL appendix's titles).
std::string NiahHeatmapTitle(std::string_view model_name, std::string_view mode);

}  // namespace hgeval::niah

#endif  // HGEVAL_TASKS_NIAH_OUTPUT_H_
