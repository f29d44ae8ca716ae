// The web UI's scaling curves (server/http/web/series_curves.h): one curve per architecture
// with the points that have the metric, and the fit equal, bit for bit, to the one
// `hgeval sweep` writes (tasks::series::SeriesJson) for the same points.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/http/web/series_curves.h"
#include "tasks/series/series_report.h"

namespace hgeval::server::web {
namespace {

using tasks::series::FitOptions;
using tasks::series::Point;

Point MakePoint(const std::string& model, const std::string& architecture, double compute,
                double bpb) {
  Point p;
  p.checkpoint.model = model;
  p.checkpoint.architecture = architecture;
  p.checkpoint.compute = compute;
  p.metrics["heldout/bits_per_byte"] = bpb;
  p.metrics["piqa/acc"] = 0.5 + compute * 1e-22;
  return p;
}

std::vector<Point> TwoArchitectures() {
  return {MakePoint("l1", "llama", 1e18, 1.30), MakePoint("l2", "llama", 1e19, 1.12),
          MakePoint("l3", "llama", 1e20, 0.99), MakePoint("h1", "hgrn2", 2e18, 1.25),
          MakePoint("h2", "hgrn2", 2e19, 1.05), MakePoint("h3", "hgrn2", 2e20, 0.95),
          MakePoint("h4", "hgrn2", 2e21, 0.88)};
}

FitOptions Options(const std::string& metric) {
  FitOptions options;
  options.metric = metric;
  options.bootstrap_iterations = 200;
  return options;
}

TEST(WebSeriesCurvesTest, FitEqualsWhatTheSweepWritesForTheSamePoints) {
  const std::vector<Point> points = TwoArchitectures();
  const FitOptions options = Options("heldout/bits_per_byte");
  const nlohmann::json curves = SeriesCurvesJson(points, options);
  const nlohmann::json sweep = tasks::series::SeriesJson(points, options);
  ASSERT_EQ(curves["architectures"].size(), 2u);
  for (const nlohmann::json& curve : curves["architectures"]) {
    const std::string name = curve["architecture"];
    const nlohmann::json& written = sweep["fits"][name]["loss_vs_compute"];
    ASSERT_TRUE(written.contains("b")) << name;
    EXPECT_EQ(curve["fit"]["a"].get<double>(), written["a"].get<double>()) << name;
    EXPECT_EQ(curve["fit"]["b"].get<double>(), written["b"].get<double>()) << name;
    EXPECT_EQ(curve["fit"]["interval"], written["interval"]) << name;
    EXPECT_LT(curve["fit"]["b"].get<double>(), 0) << name;  // loss falls with compute
  }
}

TEST(WebSeriesCurvesTest, OneCurvePerArchitectureWithItsPointsByComputeAndTheLineThroughThem) {
  std::vector<Point> points = TwoArchitectures();
  points.push_back(MakePoint("l0", "llama", 1e17, 1.5));
  points.back().metrics.erase("heldout/bits_per_byte");  // no value: not drawn
  const nlohmann::json curves = SeriesCurvesJson(points, Options("heldout/bits_per_byte"));
  EXPECT_EQ(curves["metrics"], nlohmann::json({"heldout/bits_per_byte", "piqa/acc"}));
  EXPECT_FALSE(curves["truncated"].get<bool>());
  ASSERT_EQ(curves["architectures"].size(), 2u);
  const nlohmann::json& hgrn2 = curves["architectures"][0];
  const nlohmann::json& llama = curves["architectures"][1];
  EXPECT_EQ(hgrn2["architecture"], "hgrn2");
  EXPECT_EQ(hgrn2["points"].size(), 4u);
  ASSERT_EQ(llama["points"].size(), 3u);
  EXPECT_EQ(llama["points"][0]["model"], "l1");
  EXPECT_EQ(llama["points"][2]["compute"].get<double>(), 1e20);
  ASSERT_EQ(llama["line"].size(), 2u);
  const double a = llama["fit"]["a"].get<double>(), b = llama["fit"]["b"].get<double>();
  EXPECT_EQ(llama["line"][0][0].get<double>(), 1e18);
  EXPECT_EQ(llama["line"][1][0].get<double>(), 1e20);
  EXPECT_DOUBLE_EQ(llama["line"][1][1].get<double>(), a * std::pow(1e20, b));
}

TEST(WebSeriesCurvesTest, AnyTaskMetricCanBeChosenAndTooFewPointsSayWhy) {
  std::vector<Point> points = {MakePoint("only", "gla", 1e18, 1.2)};
  const nlohmann::json curves = SeriesCurvesJson(points, Options("piqa/acc"));
  ASSERT_EQ(curves["architectures"].size(), 1u);
  EXPECT_EQ(curves["metric"], "piqa/acc");
  EXPECT_EQ(curves["architectures"][0]["points"].size(), 1u);
  EXPECT_TRUE(curves["architectures"][0]["fit"].contains("error"));
  EXPECT_FALSE(curves["architectures"][0].contains("line"));
}

TEST(WebSeriesCurvesTest, ALongSeriesIsCutAtTheBound) {
  std::vector<Point> points;
  for (int64_t i = 0; i < kMaxSeriesCurvePoints + 5; ++i) {
    points.push_back(MakePoint("m" + std::to_string(i), "llama", 1e18 * (i + 1), 1.0));
  }
  FitOptions options = Options("heldout/bits_per_byte");
  options.bootstrap_iterations = 2;
  const nlohmann::json curves = SeriesCurvesJson(points, options);
  EXPECT_TRUE(curves["truncated"].get<bool>());
  EXPECT_EQ(curves["architectures"][0]["points"].size(),
            static_cast<size_t>(kMaxSeriesCurvePoints));
}

}  // namespace
}  // namespace hgeval::server::web
