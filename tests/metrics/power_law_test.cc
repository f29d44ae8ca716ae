#include "metrics/power_law.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

// Points of y = a x^b over x = 10^lo .. 10^hi, each y multiplied by exp(noise * s_i) with
// a fixed zero-mean pattern s_i in [-1, 1].
struct Points {
  std::vector<double> x, y;
};
Points Law(double a, double b, double lo, double hi, int n, double noise) {
  Points p;
  for (int i = 0; i < n; ++i) {
    const double x = std::pow(10.0, lo + (hi - lo) * i / (n - 1));
    p.x.push_back(x);
    p.y.push_back(a * std::pow(x, b) * std::exp(noise * std::sin(2.3 * i + 0.7)));
  }
  return p;
}

TEST(PowerLaw, RecoversExactLawsToRoundingError) {
  for (const auto& [a, b] : std::vector<std::pair<double, double>>{
           {20.0, -0.05}, {1.7e3, -0.3}, {0.2, 0.5}, {3.0, 1.0}}) {
    const Points p = Law(a, b, 12, 18, 9, 0.0);
    absl::StatusOr<PowerLaw> law = FitPowerLaw(p.x, p.y);
    ASSERT_TRUE(law.ok()) << law.status();
    EXPECT_NEAR(law->b, b, 1e-12);
    EXPECT_NEAR(law->a / a, 1.0, 1e-9);
    EXPECT_NEAR(law->r2, 1.0, 1e-12);
    EXPECT_EQ(law->points, 9);
    EXPECT_NEAR((*law)(1e15) / (a * std::pow(1e15, b)), 1.0, 1e-9);
  }
}

// 2% multiplicative noise over 6 decades: the exponent within 0.005 of the law's and
// inside its 95% bootstrap interval.
TEST(PowerLaw, RecoversNoisyExponentsWithinTolerance) {
  const Points p = Law(20.0, -0.05, 12, 18, 24, 0.02);
  absl::StatusOr<PowerLaw> law = FitPowerLaw(p.x, p.y);
  ASSERT_TRUE(law.ok());
  EXPECT_NEAR(law->b, -0.05, 0.005);
  EXPECT_LT(law->r2, 1.0);
  absl::StatusOr<PowerLawInterval> ci = BootstrapPowerLaw(p.x, p.y, 2000, 0.95, 7);
  ASSERT_TRUE(ci.ok()) << ci.status();
  EXPECT_LT(ci->b.low, -0.05);
  EXPECT_GT(ci->b.high, -0.05);
  EXPECT_LT(ci->b.high - ci->b.low, 0.02);
  EXPECT_LT(ci->a.low, ci->a.high);
  EXPECT_EQ(ci->resamples, 2000);
}

TEST(PowerLaw, BootstrapIsDeterministicForASeedAndDiffersAcrossSeeds) {
  const Points p = Law(5.0, -0.2, 6, 9, 8, 0.05);
  absl::StatusOr<PowerLawInterval> first = BootstrapPowerLaw(p.x, p.y, 500, 0.9, 42);
  absl::StatusOr<PowerLawInterval> again = BootstrapPowerLaw(p.x, p.y, 500, 0.9, 42);
  absl::StatusOr<PowerLawInterval> other = BootstrapPowerLaw(p.x, p.y, 500, 0.9, 43);
  ASSERT_TRUE(first.ok() && again.ok() && other.ok());
  EXPECT_EQ(first->b.low, again->b.low);
  EXPECT_EQ(first->b.high, again->b.high);
  EXPECT_EQ(first->a.low, again->a.low);
  EXPECT_NE(first->b.low, other->b.low);
}

TEST(PowerLaw, ExactPointsGiveAZeroWidthInterval) {
  const Points p = Law(2.0, -0.1, 1, 4, 5, 0.0);
  absl::StatusOr<PowerLawInterval> ci = BootstrapPowerLaw(p.x, p.y, 200, 0.95, 1);
  ASSERT_TRUE(ci.ok());
  EXPECT_NEAR(ci->b.low, -0.1, 1e-12);
  EXPECT_NEAR(ci->b.high, -0.1, 1e-12);
  // Resamples drawing one x value only are skipped.
  EXPECT_LE(ci->resamples, 200);
  EXPECT_GT(ci->resamples, 150);
}

TEST(PowerLaw, RefusesPointsThatHaveNoFit) {
  EXPECT_FALSE(FitPowerLaw(std::vector<double>{1.0}, std::vector<double>{1.0}).ok());
  EXPECT_FALSE(FitPowerLaw(std::vector<double>{1, 2}, std::vector<double>{1}).ok());
  EXPECT_FALSE(FitPowerLaw(std::vector<double>{1, 2}, std::vector<double>{1, 0}).ok());
  EXPECT_FALSE(FitPowerLaw(std::vector<double>{-1, 2}, std::vector<double>{1, 1}).ok());
  EXPECT_FALSE(FitPowerLaw(std::vector<double>{3, 3}, std::vector<double>{1, 2}).ok());
  EXPECT_FALSE(FitPowerLaw(std::vector<double>{1, NAN}, std::vector<double>{1, 2}).ok());
  EXPECT_FALSE(
      BootstrapPowerLaw(std::vector<double>{1, 2}, std::vector<double>{1, 2}, 0, 0.95).ok());
}

TEST(ComputeOptimalFrontier, KeepsThePointsThatBeatAllCheaperOnes) {
  // compute:   1    2    2    4    8    8   16
  // loss:      5    4.5  4    4.2  3    3.5 3.1
  const std::vector<double> compute = {2, 1, 8, 2, 4, 16, 8};
  const std::vector<double> loss = {4.5, 5, 3.5, 4, 4.2, 3.1, 3};
  EXPECT_EQ(ComputeOptimalFrontier(compute, loss), (std::vector<int>{1, 3, 6}));
  EXPECT_TRUE(ComputeOptimalFrontier({}, {}).empty());
}

}  // namespace
}  // namespace hgeval::metrics
