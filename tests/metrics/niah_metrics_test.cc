// NIAH grid metrics; expected values worked out by hand.
#include "metrics/niah_metrics.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval::metrics {
namespace {

TEST(NiahPenaltyTest, HandComputedColumns) {
  EXPECT_DOUBLE_EQ(ColumnPenalty({true, true, true}), 1.0);
  EXPECT_DOUBLE_EQ(ColumnPenalty({false, false, false}), 0.0);
  EXPECT_DOUBLE_EQ(ColumnPenalty({true, false, true}), 0.5);                         // n = 3
  EXPECT_DOUBLE_EQ(ColumnPenalty({true, true, false, false}), std::pow(2.0, -0.5));  // 2
  EXPECT_DOUBLE_EQ(ColumnPenalty({false, true, false, true, false}), 0.25);          // n = 5
}

TEST(NiahPenaltyTest, CountsRuns) {
  EXPECT_EQ(CountRuns({}), 0);
  EXPECT_EQ(CountRuns({true}), 1);
  EXPECT_EQ(CountRuns({true, true, false, true}), 3);
}

TEST(NiahPenaltyTest, GeometricWeights) {
  std::vector<double> w = GeometricWeights(4, 2.0);
  EXPECT_EQ(w, (std::vector<double>{1, 2, 4, 8}));
  w = GeometricWeights(3, 1.01);
  EXPECT_DOUBLE_EQ(w[2], 1.01 * 1.01);
}

// 3 lengths x 3 depths with alpha = 2: w = [1, 2, 4] on both axes, weight sum 49.
// scores[l][d]; success = score >= 5.
//   length 1000: depths 0,50,100 -> 10, 0, 10   b = 1,0,1  p = 2^-1
//   length 2000:                    10, 10, 10   b = 1,1,1  p = 1
//   length 3000:                     0, 7, 4.9   b = 0,1,0  p = 2^-1
TEST(NiahMetricsTest, WeightedAverageAndScoreOnThreeByThreeGrid) {
  NiahGridScores grid;
  grid.lengths = {1000, 2000, 3000};
  grid.depths = {0, 50, 100};
  grid.scores = {{10, 0, 10}, {10, 10, 10}, {0, 7, 4.9}};
  NiahMetricOptions options;
  options.depth_alpha = 2.0;
  options.length_alpha = 2.0;
  options.report_lengths = {2000, 2400, 5000};
  auto m = ComputeNiahMetrics(grid, options);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->acc_at_length, (std::vector<double>{2.0 / 3, 1.0, 1.0 / 3}));
  EXPECT_DOUBLE_EQ(m->acc_up_to_length[0], 2.0 / 3);
  EXPECT_DOUBLE_EQ(m->acc_up_to_length[1], 5.0 / 6);
  EXPECT_DOUBLE_EQ(m->acc_up_to_length[2], 6.0 / 9);
  EXPECT_DOUBLE_EQ(m->average_accuracy, 6.0 / 9);
  EXPECT_EQ(m->column_penalty, (std::vector<double>{0.5, 1.0, 0.5}));
  // Weighted successes: length w 1 x depth w (1 + 4) = 5; length w 2 x 7 = 14;
  // length w 4 x depth w 2 = 8. Sum 27 of 49.
  EXPECT_DOUBLE_EQ(m->weighted_average_accuracy, 27.0 / 49.0);
  // With penalties: 5 x 0.5 + 14 x 1 + 8 x 0.5 = 20.5.
  EXPECT_DOUBLE_EQ(m->niah_score, 20.5 / 49.0);
  // Named entries: 5000 is past the grid and left out; 2400 maps to the 2000 column.
  ASSERT_EQ(m->named.size(), 2u);
  EXPECT_EQ(m->named[0].length, 2000);
  EXPECT_EQ(m->named[0].grid_length, 2000);
  EXPECT_DOUBLE_EQ(m->named[0].acc_at, 1.0);
  EXPECT_DOUBLE_EQ(m->named[0].acc_up_to, 5.0 / 6);
  EXPECT_EQ(m->named[0].columns_up_to, 2);
  EXPECT_EQ(m->named[1].grid_length, 2000);
  EXPECT_DOUBLE_EQ(m->named[1].acc_up_to, 5.0 / 6);
}

TEST(NiahMetricsTest, DefaultAlphasWeighDeeperAndLongerCellsMore) {
  NiahGridScores grid;
  grid.lengths = {1000, 2000, 3000};
  grid.depths = {0, 50, 100};
  grid.scores = {{0, 0, 0}, {0, 0, 0}, {0, 0, 10}};  // only the heaviest cell succeeds
  auto m = ComputeNiahMetrics(grid);
  ASSERT_TRUE(m.ok());
  const double w = 1.0 + 1.01 + 1.01 * 1.01;
  EXPECT_NEAR(m->weighted_average_accuracy, (1.01 * 1.01) * (1.01 * 1.01) / (w * w), 1e-15);
  EXPECT_GT(m->weighted_average_accuracy, m->average_accuracy);
  // Column 3 is [0, 0, 1]: two runs -> 2^-0.5.
  EXPECT_NEAR(m->niah_score, m->weighted_average_accuracy * std::pow(2.0, -0.5), 1e-15);
}

TEST(NiahMetricsTest, ThresholdIsInclusive) {
  NiahGridScores grid{{1000}, {0, 100}, {{5.0, 4.999}}};
  auto m = ComputeNiahMetrics(grid);
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->acc_at_length[0], 0.5);
}

TEST(NiahMetricsTest, RejectsMalformedGrids) {
  EXPECT_FALSE(ComputeNiahMetrics(NiahGridScores{}).ok());
  EXPECT_FALSE(ComputeNiahMetrics(NiahGridScores{{1000, 2000}, {0}, {{1}}}).ok());
  EXPECT_FALSE(ComputeNiahMetrics(NiahGridScores{{1000}, {0, 50}, {{1}}}).ok());
  EXPECT_FALSE(ComputeNiahMetrics(NiahGridScores{{2000, 1000}, {0}, {{1}, {1}}}).ok());
}

}  // namespace
}  // namespace hgeval::metrics
