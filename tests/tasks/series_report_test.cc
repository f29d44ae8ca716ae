#include "tasks/series/series_report.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::tasks::series {
namespace {

// A grid of sizes N x token budgets D per architecture whose loss follows
// L = 4 * C^-0.1 exactly (C = 6ND), and an accuracy that follows 0.01 * C^0.05.
std::vector<Point> Grid(const std::string& arch, double scale) {
  std::vector<Point> points;
  for (double n : {1e4, 4e4, 1.6e5}) {
    for (double d : {1e6, 2e6, 4e6, 8e6}) {
      Point p;
      p.checkpoint = {.model = arch + "_" + std::to_string(static_cast<int>(n)) + "_" +
                               std::to_string(static_cast<int>(d)),
                      .architecture = arch,
                      .parameters = n,
                      .tokens = d,
                      .compute = 6 * n * d};
      const double c = 6 * n * d;
      p.metrics["text/loss"] = scale * 4 * std::pow(c, -0.1);
      p.metrics["mc/acc"] = 0.01 * std::pow(c, 0.05);
      points.push_back(p);
    }
  }
  return points;
}

TEST(SeriesJson, FitsEachArchitectureSeparately) {
  std::vector<Point> points = Grid("a", 1.0);
  for (const Point& p : Grid("b", 1.1)) points.push_back(p);
  const nlohmann::json report =
      SeriesJson(points, {.metric = "text/loss", .bootstrap_iterations = 100});
  EXPECT_EQ(report["checkpoints"].size(), 24u);
  for (const auto& [arch, scale] : {std::pair{"a", 1.0}, std::pair{"b", 1.1}}) {
    const nlohmann::json& fits = report["fits"][arch];
    const nlohmann::json& lc = fits["loss_vs_compute"];
    EXPECT_NEAR(lc["b"].get<double>(), -0.1, 1e-12) << arch;
    EXPECT_NEAR(lc["a"].get<double>(), 4 * scale, 1e-9) << arch;
    EXPECT_EQ(lc["points"], 12);
    EXPECT_NEAR(lc["interval"]["b"][0].get<double>(), -0.1, 1e-12);
    // L(N): each N at its largest D (8e6): L = 4 (48e6 N)^-0.1, the exponent -0.1.
    EXPECT_EQ(fits["loss_vs_parameters"]["points"], 3);
    EXPECT_NEAR(fits["loss_vs_parameters"]["b"].get<double>(), -0.1, 1e-12);
    EXPECT_EQ(fits["loss_vs_tokens"]["points"], 4);
    EXPECT_NEAR(fits["metrics_vs_compute"]["mc/acc"]["b"].get<double>(), 0.05, 1e-12);
    EXPECT_FALSE(fits["metrics_vs_compute"].contains("text/loss"));
  }
}

TEST(SeriesJson, OptimalSizeAndDataFollowTheFrontier) {
  // Loss falls with C for the small model until it saturates; the larger one wins beyond.
  std::vector<Point> points;
  auto add = [&](double n, double d, double loss) {
    Point p;
    p.checkpoint = {.model = std::to_string(n) + "/" + std::to_string(d),
                    .architecture = "x",
                    .parameters = n,
                    .tokens = d,
                    .compute = 6 * n * d};
    p.metrics["l"] = loss;
    points.push_back(p);
  };
  add(1e3, 1e3, 5.0);  // C 6e6: frontier
  add(1e3, 1e4, 4.0);  // 6e7: frontier
  add(1e3, 1e5, 3.9);  // 6e8: not (the larger model at the same C is lower)
  add(1e4, 1e4, 3.5);  // 6e8: frontier
  add(1e4, 1e5, 3.0);  // 6e9: frontier
  const nlohmann::json fits =
      SeriesJson(points, {.metric = "l", .bootstrap_iterations = 50})["fits"]["x"];
  const nlohmann::json& n_opt = fits["optimal_parameters_vs_compute"];
  EXPECT_EQ(n_opt["points"], 4);
  EXPECT_EQ(n_opt["models"].size(), 4u);
  EXPECT_GT(n_opt["b"].get<double>(), 0);
  EXPECT_EQ(fits["optimal_tokens_vs_compute"]["points"], 4);
}

TEST(SeriesJson, SaysWhyAFitIsMissing) {
  std::vector<Point> points = Grid("a", 1.0);
  points.resize(1);
  const nlohmann::json fits = SeriesJson(points, {.metric = "text/loss"})["fits"]["a"];
  EXPECT_TRUE(fits["loss_vs_compute"].contains("error"));
  EXPECT_FALSE(fits["loss_vs_compute"].contains("b"));
}

TEST(ParseSeriesFile, ReadsCheckpointsAndDefaultsComputeTo6ND) {
  absl::StatusOr<std::vector<Checkpoint>> c = ParseSeriesFile(
      R"({"checkpoints": [{"model": "m1", "architecture": "llama", "parameters": 100,
          "tokens": 1000, "step": 7}, {"model": "m2", "compute": 5e9}]})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].architecture, "llama");
  EXPECT_EQ((*c)[0].compute, 6e5);
  EXPECT_EQ((*c)[0].step, 7);
  EXPECT_EQ((*c)[1].compute, 5e9);
  EXPECT_EQ((*c)[1].step, -1);
}

TEST(ParseSeriesFile, RefusesBadFiles) {
  for (const char* text :
       {"", "[]", R"({"checkpoints": []})", R"({"checkpoints": [{"architecture": "x"}]})",
        R"({"checkpoints": [{"model": "a"}, {"model": "a"}]})",
        R"({"checkpoints": [{"model": "a", "tokens": -1}]})",
        R"({"checkpoints": [{"model": "a", "parameters": "many"}]})"}) {
    EXPECT_FALSE(ParseSeriesFile(text).ok()) << text;
  }
}

TEST(SeriesCsvAndTable, OneRowPerCheckpointAndPerSize) {
  std::vector<Point> points = Grid("a", 1.0);
  points[0].model_hash = "h0";
  const std::string csv = SeriesCsv(points);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 13);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "model,model_hash,architecture,parameters,tokens,compute,step,mc/acc,text/loss");
  EXPECT_NE(csv.find("a_10000_1000000,h0,a,10000,1000000,6e+10,-1,"), std::string::npos);
  const std::string table = SeriesTable(points, "text/loss");
  // Header, rule, one row per size (at D = 8e6); mc is not a CSR task.
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5);
  EXPECT_NE(table.find("| a | 1.6e+05 | 8e+06 |"), std::string::npos);
  EXPECT_EQ(table.find("CSR"), std::string::npos);
}

}  // namespace
}  // namespace hgeval::tasks::series
