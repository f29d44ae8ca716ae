// The wgmma flash kernel inside a model: a random LLaMA of head dim 128
// (kHeadDim128Llama) takes it in bf16 on a compute capability 9.0 GPU, and its
// log-probabilities match the CPU backend's fp32 model on the same weights, within
// golden_gpu_test's bf16 bounds (the CUDA fp32 model within its fp32 bound), for items
// from scratch and items continuing a cached prefix, packed in one Forward, and for the
// decode step after them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/flash_kernel_choice.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "gtest/gtest.h"
#include "tests/cuda/cuda_test_util.h"

namespace hgeval::testing {
namespace {

// golden_gpu_test.cc's bounds: per log-probability, and bf16's whole-table relative L2.
constexpr double kFp32Bound = 1e-3;
constexpr double kBf16Bound = 1.0;
constexpr double kBf16RelL2 = 1e-2;

TEST(WgmmaLlamaGpuTest, Bf16PrefillTakesWgmmaKernel) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  if (!GpuIsSm90()) GTEST_SKIP() << "the wgmma kernel runs on compute capability 9.0 only";
  auto config = ParseModelConfig(HeadDim128LlamaConfig());
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->head_dim, 128);
  ASSERT_LT(config->num_kv_heads, config->num_heads);  // GQA
  EXPECT_EQ(cuda::ChosenFlashKernel(static_cast<int>(config->head_dim)), cuda::FlashKernel::kWgmma)
      << "this build holds no sm_90a flash kernel (CMAKE_CUDA_ARCHITECTURES 90a)";
  // The golden LLaMA (head dim 32) stays on mma.sync: hence this model.
  EXPECT_EQ(cuda::ChosenFlashKernel(32), cuda::FlashKernel::kMmaSync);
}

// Items of one Forward: from scratch, or continuing `prefix_tokens` (a cached prefix).
struct Item {
  std::vector<int32_t> tokens, targets;
  bool continues_prefix = false;
};

struct Run {
  std::vector<ForwardOutput> outs;   // per item, every position's whole distribution
  std::vector<ForwardOutput> steps;  // per item, one decode step after it
};

absl::StatusOr<Run> RunItems(Model& model, const std::vector<int32_t>& prefix_tokens,
                             const std::vector<Item>& items, int32_t step_token) {
  const int vocab = static_cast<int>(model.info().vocab_size);
  auto prefix = model.NewState();
  auto prefill = RunOne(model, prefix.get(), prefix_tokens, {});
  if (!prefill.ok()) return prefill.status();
  std::vector<std::unique_ptr<SequenceState>> states;
  std::vector<ForwardItem> forward(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    states.push_back(items[i].continues_prefix ? prefix->Clone() : model.NewState());
    forward[i].tokens = items[i].tokens;
    forward[i].targets = items[i].targets;
    forward[i].state = states[i].get();
    forward[i].top_k = vocab;
  }
  Run run;
  run.outs.resize(items.size());
  absl::Status st = model.Forward(forward, absl::MakeSpan(run.outs));
  if (!st.ok()) return st;
  for (size_t i = 0; i < items.size(); ++i) {
    auto step = RunOne(model, states[i].get(), {step_token}, {}, /*want_last=*/true);
    if (!step.ok()) return step.status();
    run.steps.push_back(std::move(*step));
  }
  return run;
}

class WgmmaLlamaVsCpuTest : public ::testing::TestWithParam<std::string> {};

TEST_P(WgmmaLlamaVsCpuTest, MatchesCpuFp32) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const std::string dtype = GetParam();
  const bool fp32 = dtype == "fp32";
  LoadOptions cpu_options;  // device "cpu", fp32
  auto cpu = BuildHeadDim128Llama(cpu_options);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto gpu = BuildGoldenCudaModel(kHeadDim128Llama, dtype);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const int vocab = static_cast<int>((*gpu)->info().vocab_size);
  ASSERT_EQ((*cpu)->info().vocab_size, vocab);

  std::mt19937 rng(32);
  auto random_tokens = [&](int n) { return RandomTokens(rng, n, vocab); };
  // Lengths around the kernel's 64-row query tiles and 128-row key tiles, and longer.
  const std::vector<int32_t> prefix_tokens = random_tokens(150);
  std::vector<Item> items;
  for (int len : {1, 17, 64, 65, 129, 700}) items.push_back({random_tokens(len), {}, false});
  for (int len : {1, 40, 130}) items.push_back({random_tokens(len), {}, true});
  for (Item& item : items) item.targets = random_tokens(static_cast<int>(item.tokens.size()));
  const int32_t step_token = RandomTokens(rng, 1, vocab)[0];

  auto want = RunItems(**cpu, prefix_tokens, items, step_token);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = RunItems(**gpu, prefix_tokens, items, step_token);
  ASSERT_TRUE(got.ok()) << got.status();

  const double bound = fp32 ? kFp32Bound : kBf16Bound;
  double worst = 0.0, err2 = 0.0, ref2 = 0.0;
  int violations = 0;
  auto compare = [&](double have, double ref, const std::string& where) {
    const double d = std::fabs(have - ref);
    worst = std::max(worst, d);
    err2 += d * d;
    ref2 += ref * ref;
    if (d > bound && ++violations <= 5) {
      ADD_FAILURE() << dtype << " " << where << ": |dlogprob| " << d << " > " << bound;
    }
  };
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string label = "item " + std::to_string(i) + " (" +
                              std::to_string(items[i].tokens.size()) + " tokens" +
                              (items[i].continues_prefix ? " after the prefix)" : ")");
    const ForwardOutput& w = want->outs[i];
    const ForwardOutput& g = got->outs[i];
    ASSERT_EQ(g.top_k.size(), items[i].tokens.size()) << label;
    ASSERT_EQ(w.top_k.size(), items[i].tokens.size()) << label;
    for (size_t t = 0; t < items[i].tokens.size(); ++t) {
      ASSERT_EQ(static_cast<int>(g.top_k[t].size()), vocab) << label;
      ASSERT_EQ(static_cast<int>(w.top_k[t].size()), vocab) << label;
      std::vector<double> ref(vocab);
      for (const TokenLogprob& e : w.top_k[t]) ref[e.token] = e.logprob;
      for (const TokenLogprob& e : g.top_k[t]) {
        compare(e.logprob, ref[e.token], label + " t=" + std::to_string(t));
      }
      compare(g.logprob[t], w.logprob[t], label + " target t=" + std::to_string(t));
    }
    const std::vector<float>& ws = want->steps[i].last_logprobs;
    const std::vector<float>& gs = got->steps[i].last_logprobs;
    ASSERT_EQ(static_cast<int>(gs.size()), vocab) << label;
    ASSERT_EQ(static_cast<int>(ws.size()), vocab) << label;
    for (int v = 0; v < vocab; ++v) compare(gs[v], ws[v], label + " decode step");
  }
  const double rel_l2 = std::sqrt(err2 / ref2);
  std::printf(
      "[wgmma_llama] %s vs CPU fp32: max |dlogprob| = %.3g (bound %.3g), relative L2 = %.3g\n",
      dtype.c_str(), worst, bound, rel_l2);
  EXPECT_EQ(violations, 0);
  if (!fp32) EXPECT_LE(rel_l2, kBf16RelL2);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, WgmmaLlamaVsCpuTest, ::testing::Values("bf16", "fp32"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hgeval::testing
