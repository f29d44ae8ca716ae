// What the PNG plots drawn with cairo share (the NIAH heatmap, the series plot): owning
// handles of a surface and its context, and text placed by an alignment point.
#ifndef HGEVAL_TASKS_PLOT_CAIRO_CANVAS_H_
#define HGEVAL_TASKS_PLOT_CAIRO_CANVAS_H_

#include <cairo.h>

#include <memory>
#include <string>

namespace hgeval::plot {

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
using Surface = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using Context = std::unique_ptr<cairo_t, ContextDeleter>;

// Draws `text` so that the point (align_x, align_y) of its ink box (0: left/top, 1:
// right/bottom) lands on (x, y).
void ShowText(cairo_t* cr, const std::string& text, double x, double y, double align_x,
              double align_y);

}  // namespace hgeval::plot

#endif  // HGEVAL_TASKS_PLOT_CAIRO_CANVAS_H_
