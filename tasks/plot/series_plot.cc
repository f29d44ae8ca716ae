#include "tasks/plot/series_plot.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tasks/plot/cairo_canvas.h"

namespace hgeval::plot {
namespace {

// Colour-blind-safe (Okabe-Ito) colours, one per curve in order.
constexpr double kColors[][3] = {{0.00, 0.45, 0.70}, {0.84, 0.37, 0.00}, {0.00, 0.62, 0.45},
                                 {0.80, 0.47, 0.65}, {0.90, 0.62, 0.00}, {0.34, 0.71, 0.91}};

// A log axis over [lo, hi] (log10), widened to whole or half decades.
struct LogAxis {
  double lo, hi;
  double Fraction(double v) const { return (std::log10(v) - lo) / (hi - lo); }
};

LogAxis MakeAxis(double min, double max) {
  double lo = std::log10(min), hi = std::log10(max);
  const double pad = std::max(0.05 * (hi - lo), 0.02);
  lo -= pad;
  hi += pad;
  return {lo, hi};
}

// Tick values: powers of 10 when the axis spans a decade or more, else even steps.
std::vector<double> Ticks(const LogAxis& axis) {
  std::vector<double> ticks;
  if (axis.hi - axis.lo >= 1.0) {
    for (int e = static_cast<int>(std::ceil(axis.lo)); e <= std::floor(axis.hi); ++e) {
      ticks.push_back(std::pow(10.0, e));
    }
    return ticks;
  }
  // Narrower than a decade: multiples of a 1-2-5 step giving about 5 ticks.
  const double lo = std::pow(10.0, axis.lo), hi = std::pow(10.0, axis.hi);
  double step = std::pow(10.0, std::floor(std::log10((hi - lo) / 5)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if ((hi - lo) / (m * step) <= 7) {
      step *= m;
      break;
    }
  }
  for (double v = std::ceil(lo / step) * step; v <= hi; v += step) ticks.push_back(v);
  return ticks;
}

std::string TickLabel(double v) {
  const double e = std::log10(v);
  if (std::fabs(e - std::round(e)) < 1e-9 && std::fabs(e) >= 3) {
    return absl::StrFormat("1e%d", static_cast<int>(std::round(e)));
  }
  return absl::StrFormat("%.3g", v);
}

}  // namespace

absl::Status WriteSeriesPlotPng(const std::vector<Curve>& curves, const PlotOptions& options,
                                const std::string& path) {
  double x_min = INFINITY, x_max = 0, y_min = INFINITY, y_max = 0;
  for (const Curve& c : curves) {
    for (size_t i = 0; i < c.x.size() && i < c.y.size(); ++i) {
      if (!(c.x[i] > 0) || !(c.y[i] > 0)) continue;
      x_min = std::min(x_min, c.x[i]);
      x_max = std::max(x_max, c.x[i]);
      y_min = std::min(y_min, c.y[i]);
      y_max = std::max(y_max, c.y[i]);
    }
  }
  if (!(x_max > 0)) return absl::InvalidArgumentError("series plot: no positive points");
  const LogAxis xa = MakeAxis(x_min, x_max), ya = MakeAxis(y_min, y_max);
  const double left = 90, right = 30, top = 60, bottom = 70;
  const double pw = options.width - left - right, ph = options.height - top - bottom;
  auto px = [&](double v) { return left + pw * xa.Fraction(v); };
  auto py = [&](double v) { return top + ph * (1.0 - ya.Fraction(v)); };

  Surface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, options.width, options.height));
  Context context(cairo_create(surface.get()));
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  // Grid and tick labels.
  cairo_set_line_width(cr, 1.0);
  cairo_set_font_size(cr, 11);
  for (double t : Ticks(xa)) {
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, px(t), top);
    cairo_line_to(cr, px(t), top + ph);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    ShowText(cr, TickLabel(t), px(t), top + ph + 6, 0.5, 0.0);
  }
  for (double t : Ticks(ya)) {
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, left, py(t));
    cairo_line_to(cr, left + pw, py(t));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    ShowText(cr, TickLabel(t), left - 6, py(t), 1.0, 0.5);
  }
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  cairo_rectangle(cr, left, top, pw, ph);
  cairo_stroke(cr);

  // Curves: the fitted line over the curve's x range, then its points.
  cairo_save(cr);
  cairo_rectangle(cr, left, top, pw, ph);
  cairo_clip(cr);
  for (size_t k = 0; k < curves.size(); ++k) {
    const Curve& c = curves[k];
    const double* rgb = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    double lo = INFINITY, hi = 0;
    for (double x : c.x) {
      if (x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
    }
    if (c.has_fit && hi > 0) {
      cairo_set_line_width(cr, 2.0);
      const int steps = 64;
      for (int i = 0; i <= steps; ++i) {
        const double x = lo * std::pow(hi / lo, static_cast<double>(i) / steps);
        const double y = c.a * std::pow(x, c.b);
        if (i == 0) {
          cairo_move_to(cr, px(x), py(y));
        } else {
          cairo_line_to(cr, px(x), py(y));
        }
      }
      cairo_stroke(cr);
    }
    for (size_t i = 0; i < c.x.size() && i < c.y.size(); ++i) {
      if (!(c.x[i] > 0) || !(c.y[i] > 0)) continue;
      cairo_arc(cr, px(c.x[i]), py(c.y[i]), 4.0, 0, 2 * M_PI);
      cairo_fill(cr);
    }
  }
  cairo_restore(cr);

  // Legend (top right, inside the plot), title and axis labels.
  cairo_set_font_size(cr, 12);
  for (size_t k = 0; k < curves.size(); ++k) {
    const Curve& c = curves[k];
    const double* rgb = kColors[k % (sizeof(kColors) / sizeof(kColors[0]))];
    const double y = top + 16 + 18 * k;
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_arc(cr, left + pw - 250, y, 4.0, 0, 2 * M_PI);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    std::string text = c.label;
    if (c.has_fit) absl::StrAppend(&text, absl::StrFormat(":  %.4g x^%.4f", c.a, c.b));
    ShowText(cr, text, left + pw - 240, y, 0.0, 0.5);
  }
  cairo_set_font_size(cr, 16);
  ShowText(cr, options.title, left + pw / 2, 18, 0.5, 0.0);
  cairo_set_font_size(cr, 13);
  ShowText(cr, options.x_label, left + pw / 2, options.height - 28, 0.5, 0.0);
  cairo_save(cr);
  cairo_translate(cr, 22, top + ph / 2);
  cairo_rotate(cr, -M_PI / 2);
  ShowText(cr, options.y_label, 0, 0, 0.5, 0.5);
  cairo_restore(cr);

  cairo_surface_flush(surface.get());
  if (cairo_surface_write_to_png(surface.get(), path.c_str()) != CAIRO_STATUS_SUCCESS) {
    return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  return absl::OkStatus();
}

}  // namespace hgeval::plot
