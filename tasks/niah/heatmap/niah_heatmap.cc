#include "tasks/niah/heatmap/niah_heatmap.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tasks/plot/cairo_canvas.h"

namespace hgeval::heatmap {
namespace {

constexpr Rgb kLow{0xF0, 0x49, 0x6E};
constexpr Rgb kMid{0xEB, 0xB8, 0x39};
constexpr Rgb kHigh{0x0C, 0xD7, 0x9F};

// Margins around the cell area (pixels).
constexpr double kLeftMargin = 90, kTopMargin = 78, kRightMargin = 130, kBottomMargin = 70;
constexpr double kColorBarGap = 24, kColorBarWidth = 22;

uint8_t Mix(uint8_t a, uint8_t b, double t) {
  return static_cast<uint8_t>(std::lround(a + (static_cast<double>(b) - a) * t));
}

void SetColor(cairo_t* cr, const Rgb& c) {
  cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
}

using plot::ShowText;

std::string FormatDepth(double depth) {
  if (depth == std::floor(depth)) return absl::StrFormat("%.0f", depth);
  return absl::StrFormat("%.1f", depth);
}

// Every k-th label so that labels of `label_size` pixels fit in cells of `cell_size`.
int LabelStride(double cell_size, double label_size) {
  if (cell_size <= 0) return 1;
  return std::max(1, static_cast<int>(std::ceil(label_size / cell_size)));
}

}  // namespace

Rgb ScoreColor(double score, double min_score, double max_score) {
  double t = max_score > min_score ? (score - min_score) / (max_score - min_score) : 0.0;
  t = std::clamp(t, 0.0, 1.0);
  if (t <= 0.5) {
    const double u = t / 0.5;
    return Rgb{Mix(kLow.r, kMid.r, u), Mix(kLow.g, kMid.g, u), Mix(kLow.b, kMid.b, u)};
  }
  const double u = (t - 0.5) / 0.5;
  return Rgb{Mix(kMid.r, kHigh.r, u), Mix(kMid.g, kHigh.g, u), Mix(kMid.b, kHigh.b, u)};
}

HeatmapLayout ComputeHeatmapLayout(int num_lengths, int num_depths, const HeatmapOptions& options) {
  HeatmapLayout layout;
  layout.left = kLeftMargin;
  layout.top = kTopMargin;
  const double plot_width = options.width - kLeftMargin - kRightMargin;
  const double plot_height = options.height - kTopMargin - kBottomMargin;
  layout.cell_width = num_lengths > 0 ? plot_width / num_lengths : 0;
  layout.cell_height = num_depths > 0 ? plot_height / num_depths : 0;
  return layout;
}

std::string NiahMetricsSubtitle(const metrics::NiahMetrics& m) {
  std::string s = absl::StrFormat("weighted avg acc %.3f | NIAH score %.3f | avg acc %.3f",
                                  m.weighted_average_accuracy, m.niah_score, m.average_accuracy);
  for (const metrics::NiahNamedAccuracy& named : m.named) {
    absl::StrAppendFormat(&s, " | acc@%d %.3f", named.length, named.acc_at);
  }
  return s;
}

absl::Status WriteNiahHeatmapPng(const metrics::NiahGridScores& grid, const HeatmapOptions& options,
                                 const std::string& path) {
  const int num_lengths = static_cast<int>(grid.lengths.size());
  const int num_depths = static_cast<int>(grid.depths.size());
  if (num_lengths == 0 || num_depths == 0 ||
      grid.scores.size() != static_cast<size_t>(num_lengths)) {
    return absl::InvalidArgumentError("heatmap: grid is empty or its scores are malformed");
  }
  for (const auto& column : grid.scores) {
    if (column.size() != static_cast<size_t>(num_depths)) {
      return absl::InvalidArgumentError("heatmap: ragged score grid");
    }
  }
  if (options.width < kLeftMargin + kRightMargin + num_lengths ||
      options.height < kTopMargin + kBottomMargin + num_depths) {
    return absl::InvalidArgumentError(
        absl::StrFormat("heatmap: %dx%d pixels is too small for %d x %d cells", options.width,
                        options.height, num_lengths, num_depths));
  }

  plot::Surface surface(
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, options.width, options.height));
  plot::Context context(cairo_create(surface.get()));
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  const HeatmapLayout layout = ComputeHeatmapLayout(num_lengths, num_depths, options);
  const double plot_width = layout.cell_width * num_lengths;
  const double plot_height = layout.cell_height * num_depths;

  // Cells, with thin white separators as FoX draws them (linewidths 0.5).
  for (int l = 0; l < num_lengths; ++l) {
    for (int d = 0; d < num_depths; ++d) {
      const double score = grid.scores[l][d];
      if (std::isnan(score)) {
        cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
      } else {
        SetColor(cr, ScoreColor(score, options.min_score, options.max_score));
      }
      cairo_rectangle(cr, layout.left + l * layout.cell_width, layout.top + d * layout.cell_height,
                      layout.cell_width, layout.cell_height);
      cairo_fill(cr);
    }
  }
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_set_line_width(cr, 0.5);
  for (int l = 1; l < num_lengths; ++l) {
    cairo_move_to(cr, layout.left + l * layout.cell_width, layout.top);
    cairo_line_to(cr, layout.left + l * layout.cell_width, layout.top + plot_height);
  }
  for (int d = 1; d < num_depths; ++d) {
    cairo_move_to(cr, layout.left, layout.top + d * layout.cell_height);
    cairo_line_to(cr, layout.left + plot_width, layout.top + d * layout.cell_height);
  }
  cairo_stroke(cr);

  // Dashed line at the training length, placed between column centres.
  if (options.training_length > 0 && options.training_length >= grid.lengths.front() &&
      options.training_length <= grid.lengths.back()) {
    double x = layout.left + 0.5 * layout.cell_width;
    for (int l = 0; l + 1 < num_lengths; ++l) {
      const double a = static_cast<double>(grid.lengths[l]);
      const double b = static_cast<double>(grid.lengths[l + 1]);
      if (options.training_length >= a && options.training_length <= b) {
        const double t = b > a ? (options.training_length - a) / (b - a) : 0.0;
        x = layout.left + (l + 0.5 + t) * layout.cell_width;
        break;
      }
    }
    const double dash[] = {8.0, 5.0};
    cairo_set_dash(cr, dash, 2, 0);
    cairo_set_line_width(cr, 2.0);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    cairo_move_to(cr, x, layout.top);
    cairo_line_to(cr, x, layout.top + plot_height);
    cairo_stroke(cr);
    cairo_set_dash(cr, nullptr, 0, 0);
  }

  // Ticks and axis labels.
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  cairo_set_font_size(cr, 11);
  const int x_stride = LabelStride(layout.cell_width, 44);
  for (int l = 0; l < num_lengths; l += x_stride) {
    ShowText(cr, absl::StrCat(grid.lengths[l]), layout.left + (l + 0.5) * layout.cell_width,
             layout.top + plot_height + 6, 0.5, 0.0);
  }
  const int y_stride = LabelStride(layout.cell_height, 13);
  for (int d = 0; d < num_depths; d += y_stride) {
    ShowText(cr, FormatDepth(grid.depths[d]), layout.left - 6,
             layout.top + (d + 0.5) * layout.cell_height, 1.0, 0.5);
  }
  cairo_set_font_size(cr, 14);
  ShowText(cr, "Token Limit", layout.left + plot_width / 2, options.height - 30, 0.5, 0.0);
  cairo_save(cr);
  cairo_translate(cr, 24, layout.top + plot_height / 2);
  cairo_rotate(cr, -M_PI / 2);
  ShowText(cr, "Depth Percent", 0, 0, 0.5, 0.5);
  cairo_restore(cr);

  // Title and subtitle.
  cairo_set_font_size(cr, 18);
  ShowText(cr, options.title, layout.left + plot_width / 2, 14, 0.5, 0.0);
  cairo_set_font_size(cr, 12);
  ShowText(cr, options.subtitle, layout.left + plot_width / 2, 44, 0.5, 0.0);

  // Colour bar: high scores at the top.
  const double bar_left = layout.left + plot_width + kColorBarGap;
  const int steps = static_cast<int>(std::max(1.0, std::floor(plot_height)));
  for (int i = 0; i < steps; ++i) {
    const double t = 1.0 - (i + 0.5) / steps;
    SetColor(cr, ScoreColor(options.min_score + t * (options.max_score - options.min_score),
                            options.min_score, options.max_score));
    cairo_rectangle(cr, bar_left, layout.top + i * plot_height / steps, kColorBarWidth,
                    plot_height / steps + 0.5);
    cairo_fill(cr);
  }
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  cairo_set_line_width(cr, 1.0);
  cairo_rectangle(cr, bar_left, layout.top, kColorBarWidth, plot_height);
  cairo_stroke(cr);
  cairo_set_font_size(cr, 11);
  const double range = options.max_score - options.min_score;
  for (int i = 0; i <= 5; ++i) {
    const double value = options.min_score + range * i / 5.0;
    const double y = layout.top + plot_height * (1.0 - i / 5.0);
    cairo_move_to(cr, bar_left + kColorBarWidth, y);
    cairo_line_to(cr, bar_left + kColorBarWidth + 4, y);
    cairo_stroke(cr);
    ShowText(cr, absl::StrFormat("%g", value), bar_left + kColorBarWidth + 7, y, 0.0, 0.5);
  }
  cairo_save(cr);
  cairo_set_font_size(cr, 14);
  cairo_translate(cr, bar_left + kColorBarWidth + 52, layout.top + plot_height / 2);
  cairo_rotate(cr, -M_PI / 2);
  ShowText(cr, "Score", 0, 0, 0.5, 0.5);
  cairo_restore(cr);

  cairo_surface_flush(surface.get());
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("heatmap: cairo: ", cairo_status_to_string(cairo_status(cr))));
  }
  const cairo_status_t written = cairo_surface_write_to_png(surface.get(), path.c_str());
  if (written != CAIRO_STATUS_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("heatmap: cannot write ", path, ": ", cairo_status_to_string(written)));
  }
  return absl::OkStatus();
}

}  // namespace hgeval::heatmap
