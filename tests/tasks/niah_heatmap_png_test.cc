// The NIAH heatmap PNG: size, cell colours for known scores, the colour scale.
#include <cairo.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "metrics/niah_metrics.h"
#include "tasks/niah/heatmap/niah_heatmap.h"
#include "tests/support/paths.h"

namespace hgeval::heatmap {
namespace {

TEST(HeatmapColorTest, ThreeColourScale) {
  EXPECT_EQ(ScoreColor(0, 0, 10), (Rgb{0xF0, 0x49, 0x6E}));
  EXPECT_EQ(ScoreColor(5, 0, 10), (Rgb{0xEB, 0xB8, 0x39}));
  EXPECT_EQ(ScoreColor(10, 0, 10), (Rgb{0x0C, 0xD7, 0x9F}));
  // Clamped outside the range.
  EXPECT_EQ(ScoreColor(-3, 0, 10), (Rgb{0xF0, 0x49, 0x6E}));
  EXPECT_EQ(ScoreColor(12, 0, 10), (Rgb{0x0C, 0xD7, 0x9F}));
  // 2.5 is halfway from #F0496E to #EBB839: (240+235)/2 = 237.5 -> 238, (73+184)/2 =
  // 128.5 -> 129, (110+57)/2 = 83.5 -> 84.
  EXPECT_EQ(ScoreColor(2.5, 0, 10), (Rgb{238, 129, 84}));
  // 7.5: (235+12)/2 = 123.5 -> 124, (184+215)/2 = 199.5 -> 200, (57+159)/2 = 108.
  EXPECT_EQ(ScoreColor(7.5, 0, 10), (Rgb{124, 200, 108}));
}

Rgb PixelAt(cairo_surface_t* image, double x, double y) {
  const int stride = cairo_image_surface_get_stride(image);
  const unsigned char* data = cairo_image_surface_get_data(image);
  const uint32_t pixel = *reinterpret_cast<const uint32_t*>(data + static_cast<int>(y) * stride +
                                                            static_cast<int>(x) * 4);
  return Rgb{static_cast<uint8_t>((pixel >> 16) & 0xFF), static_cast<uint8_t>((pixel >> 8) & 0xFF),
             static_cast<uint8_t>(pixel & 0xFF)};
}

TEST(HeatmapPngTest, CellsHaveTheColoursOfTheirScores) {
  metrics::NiahGridScores grid;
  grid.lengths = {1000, 2000, 3000, 4000};
  grid.depths = {0, 33, 67, 100};
  grid.scores = {{0, 5, 10, 2.5},
                 {10, 10, 10, 10},
                 {7.5, 0, 5, std::numeric_limits<double>::quiet_NaN()},
                 {1, 2, 3, 4}};
  auto metrics = metrics::ComputeNiahMetrics(grid);
  ASSERT_TRUE(metrics.ok());
  HeatmapOptions options;
  options.title = "Needle In A HayStack - easy mode - test";
  options.subtitle = NiahMetricsSubtitle(*metrics);
  options.training_length = 2500;
  options.width = 900;
  options.height = 500;
  const std::string path = hgeval::testing::MakeTempDir("heatmap") + "/grid.png";
  ASSERT_TRUE(WriteNiahHeatmapPng(grid, options, path).ok());

  cairo_surface_t* image = cairo_image_surface_create_from_png(path.c_str());
  ASSERT_EQ(cairo_surface_status(image), CAIRO_STATUS_SUCCESS);
  EXPECT_EQ(cairo_image_surface_get_width(image), 900);
  EXPECT_EQ(cairo_image_surface_get_height(image), 500);
  const HeatmapLayout layout = ComputeHeatmapLayout(4, 4, options);
  auto centre = [&](int l, int d) {
    // A quarter cell off the centre, clear of the dashed line between columns 1 and 2.
    return PixelAt(image, layout.left + (l + 0.25) * layout.cell_width,
                   layout.top + (d + 0.5) * layout.cell_height);
  };
  for (int l = 0; l < 4; ++l) {
    for (int d = 0; d < 4; ++d) {
      const double score = grid.scores[l][d];
      const Rgb want = std::isnan(score) ? Rgb{217, 217, 217} : ScoreColor(score, 0, 10);
      EXPECT_EQ(centre(l, d), want) << "cell " << l << "," << d;
    }
  }
  EXPECT_EQ(centre(0, 0), (Rgb{0xF0, 0x49, 0x6E}));
  EXPECT_EQ(centre(1, 0), (Rgb{0x0C, 0xD7, 0x9F}));
  EXPECT_EQ(centre(0, 1), (Rgb{0xEB, 0xB8, 0x39}));
  // The dashed training-length line sits halfway between the 2000 and 3000 columns.
  const double line_x = layout.left + 2.0 * layout.cell_width;
  int dark = 0;
  for (int y = static_cast<int>(layout.top); y < layout.top + 4 * layout.cell_height; ++y) {
    const Rgb p = PixelAt(image, line_x, y);
    if (p.r < 80 && p.g < 80 && p.b < 80) ++dark;
  }
  EXPECT_GT(dark, 20);
  // A white margin corner.
  EXPECT_EQ(PixelAt(image, 2, 2), (Rgb{255, 255, 255}));
  cairo_surface_destroy(image);
}

TEST(HeatmapPngTest, RejectsMalformedGrids) {
  metrics::NiahGridScores grid{{1000, 2000}, {0}, {{1}}};
  EXPECT_FALSE(WriteNiahHeatmapPng(grid, HeatmapOptions{}, "/tmp/never.png").ok());
}

}  // namespace
}  // namespace hgeval::heatmap
