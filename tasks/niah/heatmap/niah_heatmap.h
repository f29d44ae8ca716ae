// NIAH heatmap as a PNG, after Kamradt's notebook (seaborn) and FoX's plot_niah.py: one
// cell per (context length, depth), x "Token Limit", y "Depth Percent" (0 at the top),
// colours #F0496E -> #EBB839 -> #0CD79F over the score range with a colour bar, a title,
// a subtitle with the metrics, and an optional dashed line at the training length.
#ifndef HGEVAL_TASKS_NIAH_HEATMAP_NIAH_HEATMAP_H_
#define HGEVAL_TASKS_NIAH_HEATMAP_NIAH_HEATMAP_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "metrics/niah_metrics.h"

namespace hgeval::heatmap {

struct HeatmapOptions {
  std::string title;            // e.g. "Needle In A HayStack - easy mode - stories260K"
  std::string subtitle;         // e.g. the metrics line (NiahMetricsSubtitle)
  int64_t training_length = 0;  // > 0: dashed vertical line at this token count
  double min_score = 0.0;       // colour scale range
  double max_score = 10.0;
  int width = 1400;
  int height = 700;
};

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// The colour of a score: linear RGB interpolation through the three colours, placed at
// 0, 0.5 and 1 of [min_score, max_score] (clamped), rounded to the nearest byte.
Rgb ScoreColor(double score, double min_score, double max_score);

// Where the cells are drawn (pixels): cell (l, d) covers
// [left + l * cell_width, left + (l+1) * cell_width) x [top + d * cell_height, ...).
struct HeatmapLayout {
  double left = 0, top = 0, cell_width = 0, cell_height = 0;
};
HeatmapLayout ComputeHeatmapLayout(int num_lengths, int num_depths, const HeatmapOptions& options);

// "weighted acc 0.523 | NIAH score 0.401 | avg acc 0.612 | acc@2000 0.80 | ..."
std::string NiahMetricsSubtitle(const metrics::NiahMetrics& metrics);

// Draws grid.scores (NaN cells are left grey) and writes the PNG.
absl::Status WriteNiahHeatmapPng(const metrics::NiahGridScores& grid, const HeatmapOptions& options,
                                 const std::string& path);

}  // namespace hgeval::heatmap

#endif  // HGEVAL_TASKS_NIAH_HEATMAP_NIAH_HEATMAP_H_
