// The scaling plot of a checkpoint series (cairo PNG): a metric against compute (or
// parameters, tokens) on log-log axes, one colour per architecture, its points and its
// fitted power law y = a x^b drawn as a line over the points' range.
#ifndef HGEVAL_TASKS_PLOT_SERIES_PLOT_H_
#define HGEVAL_TASKS_PLOT_SERIES_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace hgeval::plot {

struct Curve {
  std::string label;  // the architecture
  std::vector<double> x, y;
  bool has_fit = false;
  double a = 0, b = 0;  // the fitted y = a x^b
};

struct PlotOptions {
  std::string title, x_label, y_label;
  int width = 900, height = 620;
};

// InvalidArgument when no curve has a positive point; Internal when the PNG cannot be
// written.
absl::Status WriteSeriesPlotPng(const std::vector<Curve>& curves, const PlotOptions& options,
                                const std::string& path);

}  // namespace hgeval::plot

#endif  // HGEVAL_TASKS_PLOT_SERIES_PLOT_H_
