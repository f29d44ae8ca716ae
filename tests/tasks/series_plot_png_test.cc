#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tasks/plot/series_plot.h"
#include "tests/support/paths.h"

namespace hgeval::plot {
namespace {

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(SeriesPlotPng, DrawsCurvesAndFitsAsAPngOfTheAskedSize) {
  Curve a{.label = "hgrn2", .has_fit = true, .a = 48.0, .b = -0.1};
  Curve b{.label = "llama", .has_fit = false};
  for (double c : {1e11, 1e12, 1e13, 1e14}) {
    a.x.push_back(c);
    a.y.push_back(48.0 * std::pow(c, -0.1));
    b.x.push_back(c);
    b.y.push_back(50.0 * std::pow(c, -0.1));
  }
  const std::string path = testing::MakeTempDir("series-plot") + "/plot.png";
  PlotOptions options;
  options.width = 640;
  options.height = 480;
  ASSERT_TRUE(WriteSeriesPlotPng({a, b}, options, path).ok());
  const std::string png = ReadBytes(path);
  ASSERT_GT(png.size(), 24u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  // IHDR: width and height, big-endian, at bytes 16..23.
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(png[at])) << 24) |
           (static_cast<uint8_t>(png[at + 1]) << 16) | (static_cast<uint8_t>(png[at + 2]) << 8) |
           static_cast<uint8_t>(png[at + 3]);
  };
  EXPECT_EQ(be32(16), 640u);
  EXPECT_EQ(be32(20), 480u);
}

TEST(SeriesPlotPng, RefusesCurvesWithoutPositivePoints) {
  Curve empty{.label = "x", .x = {0, -1}, .y = {1, 1}};
  const std::string path = testing::MakeTempDir("series-plot") + "/none.png";
  EXPECT_TRUE(absl::IsInvalidArgument(WriteSeriesPlotPng({empty}, {}, path)));
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace hgeval::plot
