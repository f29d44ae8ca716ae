// Every family over its configuration sweep, tests/golden/<family>_sweep/, on the GPU,
// fp32 and bf16, with the bounds of golden_gpu_test.cc: every fixture the CPU accepts
// either matches its reference (prefill and the one-token decode step) or is refused at
// load with a message naming the field (the fields only CUDA refuses, docs/models.md);
// every fixture the CPU refuses is refused here too (the same field named), and no
// refusal takes the process down.
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/support/config_sweep.h"

namespace hgeval::testing {
namespace {

// golden_gpu_test's bounds. bf16: a tiny random model can be ill-conditioned (hidden
// sizes of 1 to 7, norms of near-zero vectors), so each fixture records how far bf16
// storage alone moves its log-probabilities (bf16_sim.*: the float64 reference pass with
// the weights and activations a bf16 backend stores rounded to bf16; 0.005 to 3.5 over
// the sweeps) and the bf16 bounds are the golden ones or 3x that, the larger.
constexpr double kFp32Bound = 1e-3;    // per log-probability
constexpr double kBf16Bound = 1.0;     // per-entry guard
constexpr double kBf16RelL2 = 1e-2;    // whole table
constexpr double kGreedyMargin = 0.5;  // bf16: greedy checked where the top-2 gap is wider
constexpr double kBf16SimFactor = 3.0;

// The field the CUDA backend refuses although the CPU evaluates it (docs/models.md's
// CUDA column), or "".
std::string CudaOnlyRefusal(const std::string& family, const nlohmann::json& config) {
  auto set = [&](const char* key) { return config.contains(key) && !config[key].is_null(); };
  if (family == "tnl" && config.value("bias", false)) return "bias";
  if (family == "gla" && set("feature_map")) return "feature_map";  // checked first
  if ((family == "hgrn2" || family == "hgrn" || family == "gla") &&
      config.value("use_short_conv", false)) {
    return "use_short_conv";
  }
  if (family == "mamba" && config.value("state_size", 16) > 16) return "state_size";
  if (family == "mamba" && config.value("conv_kernel", 4) > 8) return "conv_kernel";
  return "";
}

std::vector<double> LogSoftmaxRow(const FixtureTensor& logits, int64_t t) {
  const int64_t V = logits.shape[1];
  std::vector<double> row(logits.values.begin() + t * V, logits.values.begin() + (t + 1) * V);
  const double mx = *std::max_element(row.begin(), row.end());
  double s = 0;
  for (double z : row) s += std::exp(z - mx);
  const double lse = mx + std::log(s);
  for (double& z : row) z -= lse;
  return row;
}

class ConfigSweepGpuTest : public ::testing::TestWithParam<std::tuple<SweepFixture, std::string>> {
};

TEST_P(ConfigSweepGpuTest, MatchesReferenceOrIsRefusedByName) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const auto& [fixture, dtype] = GetParam();
  const std::string name = fixture.id();
  const bool fp32 = dtype == "fp32";
  const std::string& dir = fixture.dir;
  LoadOptions options;
  options.device = "cuda";
  options.dtype = dtype;
  auto model = LoadModel(dir, options);
  if (!fixture.refused_field.empty()) {
    ExpectRefusedByName(model.status(), fixture.refused_field, name + " " + dtype);
    return;
  }
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const std::string cuda_refusal = CudaOnlyRefusal(fixture.family, (*checkpoint)->config());
  if (!cuda_refusal.empty()) {
    ExpectRefusedByName(model.status(), cuda_refusal, name + " " + dtype);
    return;
  }
  ASSERT_TRUE(model.ok()) << model.status();
  auto fx = ReadFixture(dir + "/expected.safetensors");
  ASSERT_TRUE(fx.ok()) << fx.status();
  const int64_t V = (*model)->info().vocab_size;
  const double sim_max = fx->at("bf16_sim.max_abs_logprob").values[0];
  const double sim_rel_l2 = fx->at("bf16_sim.rel_l2").values[0];
  const double bound = fp32 ? kFp32Bound : std::max(kBf16Bound, kBf16SimFactor * sim_max);
  const double rel_l2_bound = std::max(kBf16RelL2, kBf16SimFactor * sim_rel_l2);

  double worst = 0.0, err2 = 0.0, ref2 = 0.0;
  for (int j = 0; fx->count("input_ids." + std::to_string(j)); ++j) {
    const std::string sfx = "." + std::to_string(j);
    const std::vector<int32_t> ids = ToInts(fx->at("input_ids" + sfx));
    const FixtureTensor& logits = fx->at("logits" + sfx);
    const int64_t T = static_cast<int64_t>(ids.size());
    ASSERT_EQ(logits.shape[1], V);
    // Prefill: every position's whole distribution.
    std::vector<int32_t> targets(T, 0);
    auto state = (*model)->NewState();
    auto out = RunOne(**model, state.get(), ids, targets, /*want_last=*/false,
                      /*top_k=*/static_cast<int>(V));
    ASSERT_TRUE(out.ok()) << out.status();
    int violations = 0;
    for (int64_t t = 0; t < T; ++t) {
      const std::vector<double> ref = LogSoftmaxRow(logits, t);
      ASSERT_EQ(static_cast<int64_t>(out->top_k[t].size()), V);
      for (const TokenLogprob& e : out->top_k[t]) {
        const double d = std::fabs(e.logprob - ref[e.token]);
        worst = std::max(worst, d);
        err2 += d * d;
        ref2 += ref[e.token] * ref[e.token];
        if (d > bound && ++violations <= 3) {
          ADD_FAILURE() << name << " " << dtype << " T=" << T << " t=" << t << " token=" << e.token
                        << ": |dlogprob| " << d << " > " << bound;
        }
      }
    }
    // The one-token decode step after a prefill of T - 1 tokens.
    if (T >= 2) {
      auto fork = (*model)->NewState();
      std::vector<int32_t> head(ids.begin(), ids.end() - 1);
      ASSERT_TRUE(RunOne(**model, fork.get(), head, {}).ok());
      auto step = RunOne(**model, fork.get(), {ids.back()}, {}, /*want_last=*/true);
      ASSERT_TRUE(step.ok()) << step.status();
      const std::vector<double> ref = LogSoftmaxRow(logits, T - 1);
      ASSERT_EQ(static_cast<int64_t>(step->last_logprobs.size()), V);
      double step_worst = 0;
      for (int64_t v = 0; v < V; ++v) {
        step_worst = std::max(step_worst, std::fabs(step->last_logprobs[v] - ref[v]));
      }
      EXPECT_LE(step_worst, bound) << name << " " << dtype << " decode step, T=" << T;
      worst = std::max(worst, step_worst);
    }
  }
  const double rel_l2 = std::sqrt(err2 / ref2);
  std::printf(
      "[config_sweep] %s %s: max |dlogprob| = %.3g (bound %.3g), relative L2 = %.3g; bf16 "
      "storage alone: %.3g, %.3g\n",
      name.c_str(), dtype.c_str(), worst, bound, rel_l2, sim_max, sim_rel_l2);
  if (!fp32) EXPECT_LE(rel_l2, rel_l2_bound) << name;

  // Greedy, teacher-forced through one-token decode steps: where the model's own top-2
  // gap is wide enough that rounding cannot flip it, its choice is the reference's.
  const std::vector<int32_t> prompt = ToInts(fx->at("greedy.prompt"));
  const std::vector<int32_t> expected = ToInts(fx->at("greedy.output"));
  auto state = (*model)->NewState();
  std::vector<int32_t> feed = prompt;
  const double margin_needed = fp32 ? 2 * kFp32Bound : std::max(kGreedyMargin, 2 * sim_max);
  for (size_t i = 0; i < expected.size(); ++i) {
    auto out = RunOne(**model, state.get(), feed, {}, /*want_last=*/true);
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<double> lp(out->last_logprobs.begin(), out->last_logprobs.end());
    const auto best = std::max_element(lp.begin(), lp.end()) - lp.begin();
    double second = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      if (v != best) second = std::max(second, lp[v]);
    }
    if (lp[best] - second > margin_needed) {
      EXPECT_EQ(best, expected[i]) << name << " " << dtype << " greedy step " << i;
    }
    feed = {expected[i]};
  }
}

std::vector<std::tuple<SweepFixture, std::string>> Params() {
  std::vector<std::tuple<SweepFixture, std::string>> out;
  for (const SweepFixture& fixture : SweepFixtures()) {
    for (const char* dtype : {"fp32", "bf16"}) out.emplace_back(fixture, dtype);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConfigSweepGpuTest, ::testing::ValuesIn(Params()),
                         [](const auto& info) {
                           return std::get<0>(info.param).id() + "_" + std::get<1>(info.param);
                         });

}  // namespace
}  // namespace hgeval::testing
