// TNL (TransNormerLLM) over the configuration sweep of tests/golden/tnl_sweep (made by
// tools/fixtures/tnl_sweep.py; its README says how): every fixture either matches its
// reference logits within the golden tolerances on the CPU, or is refused at load with a
// message naming the config field its `refused` file names. Never accepted and wrong.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"

namespace hgeval {
namespace {

using testing::MaxAbsDiff;

// The golden tolerances of tests/engine/tnl_golden_test.cc.
constexpr float kLogitTolerance = 1e-4f;
constexpr double kTailTolerance = 1e-3;

std::string SweepDir() { return testing::SourcePath("tests/golden/tnl_sweep"); }

std::vector<std::string> SweepFixtures() {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(SweepDir(), error)) {
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The field a fixture must be refused for ("" when it must load and match).
std::string RefusedField(const std::string& dir) {
  std::ifstream in(dir + "/refused");
  std::string field;
  if (in) in >> field;
  return field;
}

TEST(TnlSweep, HasFixtures) { EXPECT_GE(SweepFixtures().size(), 30u) << SweepDir(); }

class TnlSweepTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TnlSweepTest, MatchesReferenceOrIsRefusedByName) {
  const std::string dir = SweepDir() + "/" + GetParam();
  const std::string refused_field = RefusedField(dir);
  auto model = LoadModel(dir, LoadOptions());
  if (!refused_field.empty()) {
    ASSERT_FALSE(model.ok()) << GetParam() << " must be refused for " << refused_field;
    const absl::StatusCode code = model.status().code();
    EXPECT_TRUE(code == absl::StatusCode::kInvalidArgument ||
                code == absl::StatusCode::kUnimplemented)
        << model.status();
    EXPECT_NE(model.status().message().find(refused_field), absl::string_view::npos)
        << model.status();
    return;
  }
  ASSERT_TRUE(model.ok()) << model.status();
  auto golden = testing::ReadGoldenExpectations(dir);
  ASSERT_TRUE(golden.ok()) << golden.status();
  ASSERT_FALSE(golden->cases.empty());
  for (const auto& c : golden->cases) {
    auto run = testing::RunCase(**model, c.ids);
    ASSERT_TRUE(run.ok()) << run.status();
    const double diff = MaxAbsDiff(run->logits, c.logits);
    EXPECT_LE(diff, kLogitTolerance) << GetParam() << " T=" << c.ids.size();
    EXPECT_NEAR(run->tail_logprob, c.tail_logprob, kTailTolerance)
        << GetParam() << " T=" << c.ids.size();
  }
  auto greedy = testing::GreedyTokens(**model, golden->greedy_prompt,
                                      static_cast<int>(golden->greedy_output.size()));
  ASSERT_TRUE(greedy.ok()) << greedy.status();
  EXPECT_EQ(*greedy, golden->greedy_output) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TnlSweepTest, ::testing::ValuesIn(SweepFixtures()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hgeval
