// lm-eval aggregations and stderrs on hand-computed inputs.
#include "metrics/aggregation.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "metrics/python_random.h"

namespace hgeval::metrics {
namespace {

TEST(MeanTest, SumOverCount) {
  EXPECT_DOUBLE_EQ(Mean(std::vector<double>{1, 0, 1, 1}), 0.75);
  EXPECT_TRUE(std::isnan(Mean(std::vector<double>{})));
}

TEST(StderrTest, SampleStddevOverSqrtN) {
  // mean 0.75; squares 3 * 0.0625 + 0.5625 = 0.75; / (n - 1) = 0.25; sqrt = 0.5.
  const std::vector<double> xs = {1, 0, 1, 1};
  EXPECT_DOUBLE_EQ(SampleStddev(xs), 0.5);
  EXPECT_DOUBLE_EQ(MeanStderr(xs), 0.25);
  // For 0/1 values it is sqrt(p (1 - p) / (n - 1)).
  EXPECT_DOUBLE_EQ(MeanStderr(xs), std::sqrt(0.75 * 0.25 / 3));
  EXPECT_TRUE(std::isnan(MeanStderr(std::vector<double>{1})));
}

TEST(PerplexityTest, ExpOfMinusMeanDocumentLoglikelihood) {
  EXPECT_DOUBLE_EQ(Perplexity(std::vector<double>{-1, -3}), std::exp(2.0));
}

TEST(PerplexityTest, WeightedAndBitsPerByte) {
  const std::vector<double> ll = {-10, -20};
  const std::vector<double> words = {5, 10};
  EXPECT_DOUBLE_EQ(WeightedPerplexity(ll, words), std::exp(2.0));
  EXPECT_DOUBLE_EQ(BitsPerByte(ll, words), 2.0 / std::log(2.0));
  // Not the mean of per-doc ratios: (-1 / 1 + -1 / 3) differs from -2 / 4.
  EXPECT_DOUBLE_EQ(WeightedPerplexity(std::vector<double>{-1, -1}, std::vector<double>{1, 3}),
                   std::exp(0.5));
}

TEST(PythonRandomTest, MatchesCPythonSeeding) {
  // random.seed(0); random.random() x4 in CPython.
  PythonRandom r0(0);
  EXPECT_DOUBLE_EQ(r0.Random(), 0.8444218515250481);
  EXPECT_DOUBLE_EQ(r0.Random(), 0.7579544029403025);
  EXPECT_DOUBLE_EQ(r0.Random(), 0.420571580830845);
  EXPECT_DOUBLE_EQ(r0.Random(), 0.25891675029296335);
  EXPECT_DOUBLE_EQ(PythonRandom(1).Random(), 0.13436424411240122);
  EXPECT_DOUBLE_EQ(PythonRandom(42).Random(), 0.6394267984578837);
}

TEST(PythonRandomTest, ChoicesIndexIsFloorOfRandomTimesN) {
  // random.seed(0); random.choices(range(10), k=3) == [8, 7, 4].
  PythonRandom r(0);
  EXPECT_EQ(r.ChoiceIndex(10), 8);
  EXPECT_EQ(r.ChoiceIndex(10), 7);
  EXPECT_EQ(r.ChoiceIndex(10), 4);
}

TEST(BootstrapTest, DeterministicAndNearTheAnalyticStderr) {
  std::vector<double> xs;
  for (int i = 0; i < 200; ++i) xs.push_back(i % 2 == 0 ? 1.0 : 0.0);
  auto mean = [](absl::Span<const double> s) { return Mean(s); };
  const double a = BootstrapStderr(mean, xs, 2000);
  const double b = BootstrapStderr(mean, xs, 2000);
  EXPECT_EQ(a, b);
  const double analytic = std::sqrt(0.25 / 200);  // 0.0354
  EXPECT_NEAR(a, analytic, 0.1 * analytic);
  // A constant sample has no spread.
  EXPECT_EQ(BootstrapStderr(mean, std::vector<double>(50, 3.0), 1000), 0.0);
}

TEST(BootstrapTest, FirstReplicateUsesSeedZeroDraws) {
  // With iters = 1 there is one chunk (seed 0) of one replicate; a single replicate has
  // no sample stddev. With iters = 2: one chunk of two replicates from seed 0. xs =
  // [0..9]: CPython's seed-0 draws of range(10) start 8, 7, 4.
  std::vector<double> xs;
  for (int i = 0; i < 10; ++i) xs.push_back(i);
  std::vector<double> firsts;
  auto record = [&firsts](absl::Span<const double> s) {
    firsts.push_back(s[0] * 100 + s[1] * 10 + s[2]);
    return Mean(s);
  };
  BootstrapStderr(record, xs, 2);
  ASSERT_EQ(firsts.size(), 2u);
  EXPECT_EQ(firsts[0], 874);
}

}  // namespace
}  // namespace hgeval::metrics
