// Parity with numpy and zoology: our legacy-RandomState stream and MQAR generator against
// tests/tasks/mqar_reference.py run by Debian's python3 with python3-numpy. The MQAR
// examples must be byte-identical (int64 inputs and labels) to what zoology's algorithm
// gives for the same (seed, L, K, V, N, power_a).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/api/numpy_random.h"
#include "tasks/mqar/generator.h"
#include "tests/support/paths.h"
#include "tests/support/shell_command.h"

namespace hgeval::tasks {
namespace {

// Debian's interpreter, not whatever python3 comes first on PATH (a pyenv one may lack
// numpy).
constexpr char kPython[] = "/usr/bin/python3";

std::string Reference(const std::string& args) {
  return absl::StrCat(kPython, " ", hgeval::testing::SourcePath("tests/tasks/mqar_reference.py"),
                      " ", args);
}

// Empty when numpy can be used; otherwise why not.
std::string NumpyUnavailableReason() {
  const hgeval::testing::ShellResult probe =
      hgeval::testing::RunShell(absl::StrCat(kPython, " -c 'import numpy' 2>&1"));
  if (probe.exit_code == 0) return "";
  return absl::StrCat(kPython,
                      " cannot import numpy (install Debian's python3-numpy): ", probe.out);
}

#define SKIP_WITHOUT_NUMPY()                                  \
  do {                                                        \
    const std::string reason = NumpyUnavailableReason();      \
    if (!reason.empty()) {                                    \
      std::fprintf(stderr, "skipping: %s\n", reason.c_str()); \
      GTEST_SKIP() << reason;                                 \
    }                                                         \
  } while (0)

// The reference writes doubles with float.hex(): exact, parsed back by strtod.
double ParseHexDouble(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

TEST(NumpyRandomStateTest, IntSeedMatchesStdMt19937) {
  // init_genrand and genrand_int32 are the reference MT19937, as std::mt19937 is.
  for (uint32_t seed : {0u, 1u, 12345u, 4294967295u}) {
    NumpyRandomState ours(seed);
    std::mt19937 reference(seed);
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(ours.NextUint32(), reference()) << seed << " " << i;
  }
}

TEST(NumpyRandomStateTest, PairwiseSumIsExactOnSmallIntegers) {
  std::vector<double> values(300);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  EXPECT_EQ(NumpyPairwiseSum(values), 299.0 * 300.0 / 2.0);
  EXPECT_EQ(NumpyPairwiseSum({}), 0.0);
}

TEST(NumpyRandomStateTest, ChoiceRejectsWhatNumpyRejects) {
  NumpyRandomState rng(1);
  EXPECT_FALSE(rng.Choice(3, 4, false).ok());
  const std::vector<double> bad_sum = {0.5, 0.6};
  EXPECT_FALSE(rng.Choice(2, 1, true, bad_sum).ok());
  const std::vector<double> one_nonzero = {1.0, 0.0};
  EXPECT_FALSE(rng.Choice(2, 2, false, one_nonzero).ok());
  const std::vector<double> wrong_size = {1.0};
  EXPECT_FALSE(rng.Choice(2, 1, true, wrong_size).ok());
}

TEST(NumpyRandomStateParityTest, LegacyDrawsMatchNumpy) {
  SKIP_WITHOUT_NUMPY();
  const hgeval::testing::ShellResult run = hgeval::testing::RunShell(Reference("rng"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json expected = nlohmann::json::parse(run.out);

  auto expected_doubles = [&](const std::string& key) {
    std::vector<double> out;
    for (const auto& s : expected[key]) out.push_back(ParseHexDouble(s.get<std::string>()));
    return out;
  };
  auto expected_ints = [&](const std::string& key) {
    return expected[key].get<std::vector<int64_t>>();
  };

  NumpyRandomState rs(12345);
  EXPECT_EQ(rs.RandomSample(5), expected_doubles("random_sample"));
  EXPECT_EQ(rs.RandInt(0, 10, 20).value(), expected_ints("randint_0_10"));
  EXPECT_EQ(rs.RandInt(5, 6, 3).value(), expected_ints("randint_5_6"));
  EXPECT_EQ(rs.RandInt(-3, (int64_t{1} << 32) - 3, 4).value(), expected_ints("randint_wide"));
  EXPECT_EQ(rs.Permutation(10), expected_ints("permutation_10"));
  EXPECT_EQ(rs.Choice(7, 6, true).value(), expected_ints("choice_replace"));
  const std::vector<double> p = {0.1, 0.0, 0.3, 0.2, 0.05, 0.25, 0.1};
  EXPECT_EQ(rs.Choice(7, 8, true, p).value(), expected_ints("choice_replace_p"));
  EXPECT_EQ(rs.Choice(7, 3, false).value(), expected_ints("choice_noreplace"));
  EXPECT_EQ(rs.Choice(7, 5, false, p).value(), expected_ints("choice_noreplace_p"));
  EXPECT_EQ(rs.RandomSample(2), expected_doubles("after"));
  NumpyRandomState max_seed(4294967295u);
  EXPECT_EQ(max_seed.RandomSample(3), expected_doubles("seed_max"));
  const std::vector<uint32_t> key = {1, 2, 3};
  NumpyRandomState array_seed = NumpyRandomState::FromSeedArray(key);
  EXPECT_EQ(array_seed.RandInt(0, int64_t{1} << 31, 4).value(), expected_ints("seed_array"));
}

TEST(MqarGeneratorParityTest, ZoologyTestSeedsMatchNumpy) {
  SKIP_WITHOUT_NUMPY();
  for (auto [train, test] : std::vector<std::pair<int, int>>{{1, 1}, {3, 5}}) {
    const hgeval::testing::ShellResult run =
        hgeval::testing::RunShell(Reference(absl::StrCat("seeds 123 ", train, " ", test)));
    ASSERT_EQ(run.exit_code, 0) << run.out;
    auto ours = mqar::ZoologyTestSeeds(123, train, test);
    ASSERT_TRUE(ours.ok()) << ours.status();
    std::vector<std::string> lines;
    for (uint32_t s : *ours) lines.push_back(absl::StrCat(s));
    EXPECT_EQ(absl::StrJoin(lines, "\n") + "\n", run.out);
  }
  EXPECT_EQ(mqar::ZoologyStandardTestSeed(), mqar::ZoologyTestSeeds(123, 1, 1).value()[0]);
}

struct ParityCase {
  uint32_t seed;
  int64_t input_seq_len;
  int64_t num_kv_pairs;
  int64_t vocab_size;
  int64_t num_examples;
  double power_a;
};

std::string CaseName(const ParityCase& c) {
  return absl::StrCat("seed=", c.seed, " L=", c.input_seq_len, " K=", c.num_kv_pairs,
                      " V=", c.vocab_size, " N=", c.num_examples, " power_a=", c.power_a);
}

void ExpectByteIdentical(const ParityCase& c) {
  mqar::MqarSegmentSpec spec;
  spec.seed = c.seed;
  spec.input_seq_len = c.input_seq_len;
  spec.num_kv_pairs = c.num_kv_pairs;
  spec.vocab_size = c.vocab_size;
  spec.num_examples = c.num_examples;
  spec.power_a = c.power_a;
  auto examples = mqar::GenerateMqarSegment(spec);
  ASSERT_TRUE(examples.ok()) << examples.status();
  // The reference's layout: all inputs [N, L] then all labels [N, L], int64 little-endian
  // (the host order here).
  std::vector<int64_t> ours;
  for (const auto& e : *examples) ours.insert(ours.end(), e.inputs.begin(), e.inputs.end());
  for (const auto& e : *examples) ours.insert(ours.end(), e.labels.begin(), e.labels.end());

  char power[32];
  std::snprintf(power, sizeof(power), "%.17g", c.power_a);
  const hgeval::testing::ShellResult run = hgeval::testing::RunShell(
      Reference(absl::StrCat("examples ", c.seed, " ", c.input_seq_len, " ", c.num_kv_pairs, " ",
                             c.vocab_size, " ", c.num_examples, " ", power)));
  ASSERT_EQ(run.exit_code, 0) << CaseName(c);
  ASSERT_EQ(run.out.size(), ours.size() * sizeof(int64_t)) << CaseName(c);
  if (std::memcmp(run.out.data(), ours.data(), run.out.size()) != 0) {
    std::vector<int64_t> theirs(ours.size());
    std::memcpy(theirs.data(), run.out.data(), run.out.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      const size_t row = (i / c.input_seq_len) % c.num_examples;
      const char* what = i < ours.size() / 2 ? "inputs" : "labels";
      ASSERT_EQ(ours[i], theirs[i])
          << CaseName(c) << ": first difference in " << what << " of example " << row
          << " at position " << i % c.input_seq_len;
    }
  }
}

TEST(MqarGeneratorParityTest, StandardTestSetsAreByteIdenticalToZoology) {
  SKIP_WITHOUT_NUMPY();
  // The four standard (L, K) test sets, in full: V = 8192, 3000 examples, zoology's test
  // seed for DataConfig.seed 123.
  const uint32_t seed = mqar::ZoologyStandardTestSeed();
  for (auto [l, k] :
       std::vector<std::pair<int64_t, int64_t>>{{64, 4}, {128, 8}, {256, 16}, {512, 64}}) {
    ExpectByteIdentical({seed, l, k, 8192, 3000, 0.01});
  }
}

TEST(MqarGeneratorParityTest, OtherSettingsAreByteIdenticalToZoology) {
  SKIP_WITHOUT_NUMPY();
  const std::vector<ParityCase> cases = {
      {0, 16, 2, 20, 50, 0.01},                // tiny vocabulary, 4 gap slots
      {4294967295u, 128, 8, 1000, 200, 0.01},  // largest seed
      {7, 256, 16, 8192, 200, 1.0},            // uniform gaps
      {5, 1024, 256, 8192, 20, 0.01},          // every gap slot taken: p drained to the end
      {123, 64, 16, 8192, 100, 0.5},           // 4K == L
  };
  for (const ParityCase& c : cases) ExpectByteIdentical(c);
}

}  // namespace
}  // namespace hgeval::tasks
