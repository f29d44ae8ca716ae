#include <cmath>
#include <map>
#include <vector>

#include "engine/runtime/generation.h"
#include "gtest/gtest.h"

namespace hgeval {
namespace {

std::vector<float> LogSoftmax(std::vector<double> logits) {
  double m = logits[0];
  for (double x : logits) m = std::max(m, x);
  double s = 0;
  for (double x : logits) s += std::exp(x - m);
  std::vector<float> out;
  for (double x : logits) out.push_back(static_cast<float>(x - m - std::log(s)));
  return out;
}

TEST(SamplerTest, ZeroTemperatureIsArgmaxWithLowestIdOnTies) {
  Sampler sampler({.temperature = 0.0f});
  EXPECT_EQ(sampler.Sample(LogSoftmax({0.1, 2.0, 2.0, -1.0})), 1);
  EXPECT_EQ(sampler.Sample(LogSoftmax({3.0, 2.0, 2.0})), 0);
}

TEST(SamplerTest, SameSeedGivesSameTokens) {
  const auto lp = LogSoftmax({0.0, 0.5, 1.0, 1.5});
  Sampler a({.temperature = 1.0f, .top_p = 1.0f, .seed = 42});
  Sampler b({.temperature = 1.0f, .top_p = 1.0f, .seed = 42});
  Sampler c({.temperature = 1.0f, .top_p = 1.0f, .seed = 43});
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 64; ++i) {
    ta.push_back(a.Sample(lp));
    tb.push_back(b.Sample(lp));
    tc.push_back(c.Sample(lp));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(SamplerTest, FrequenciesFollowTheTemperedDistribution) {
  const auto lp = LogSoftmax({0.0, std::log(3.0)});  // p = 0.25, 0.75
  Sampler sampler({.temperature = 1.0f, .top_p = 1.0f, .seed = 7});
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += sampler.Sample(lp);
  EXPECT_NEAR(ones / double(n), 0.75, 0.015);
  // Temperature 0.5 squares the odds: 9:1.
  Sampler cold({.temperature = 0.5f, .top_p = 1.0f, .seed = 7});
  ones = 0;
  for (int i = 0; i < n; ++i) ones += cold.Sample(lp);
  EXPECT_NEAR(ones / double(n), 0.9, 0.01);
}

TEST(SamplerTest, TopPKeepsOnlyTheNucleus) {
  // p = 0.6, 0.3, 0.1: top_p 0.5 keeps only the first; 0.85 keeps the first two.
  const auto lp = LogSoftmax({std::log(0.6), std::log(0.3), std::log(0.1)});
  Sampler narrow({.temperature = 1.0f, .top_p = 0.5f, .seed = 1});
  Sampler wide({.temperature = 1.0f, .top_p = 0.85f, .seed = 1});
  std::map<int32_t, int> seen;
  for (int i = 0; i < 2000; ++i) {
    EXPECT_EQ(narrow.Sample(lp), 0);
    ++seen[wide.Sample(lp)];
  }
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_GT(seen[1], 400);
}

}  // namespace
}  // namespace hgeval
