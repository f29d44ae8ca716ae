#include "tasks/plot/cairo_canvas.h"

namespace hgeval::plot {

void ShowText(cairo_t* cr, const std::string& text, double x, double y, double align_x,
              double align_y) {
  cairo_text_extents_t ext;
  cairo_text_extents(cr, text.c_str(), &ext);
  cairo_move_to(cr, x - ext.x_bearing - ext.width * align_x,
                y - ext.y_bearing - ext.height * align_y);
  cairo_show_text(cr, text.c_str());
}

}  // namespace hgeval::plot
