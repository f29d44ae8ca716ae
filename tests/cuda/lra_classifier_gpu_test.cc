// The LRA classifiers on CUDA (engine/cuda/lra_classifier.h), fp32:
//   - the trained ListOps fixture: logits within 1e-3 of PyTorch's on all its test inputs
//     (>= 100) and the same predictions, hence the same accuracy;
//   - CUDA against the CPU backend on tiny random checkpoints covering HGRN2 and HGRN1,
//     layer and batch norm, embedding and linear encoders with positions, 1-D and 2-D
//     four-direction scans, the linear and the retrieval head, optional tensors absent, and
//     head sizes of every scan-kernel variant: within 1e-4 relative;
//   - batch invariance: an example's logits alone and inside batches (several orders, and
//     a batch large enough for two passes) are bitwise equal;
//   - the projections' fallback kernel on odd shapes;
//   - refusals: bad inputs, a device that does not exist, bf16.
// Skipped without a GPU, like the other *_gpu_test programs.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/cuda/lra_kernels.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "engine/model/lra_classifier.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cuda/cuda_test_util.h"
#include "tests/tasks/lra_listops_fixture.h"
#include "tests/tasks/lra_test_checkpoint.h"

namespace hgeval::testing {
namespace {

LoadOptions OnCuda() {
  LoadOptions options;
  options.device = "cuda";
  return options;
}

TEST(LraClassifierGpuTest, ListOpsFixtureLogitsAndAccuracyEqualPyTorchs) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  if (!HaveListOpsFixture()) GTEST_SKIP() << "the trained fixture is not committed";
  auto fixture = LoadListOpsFixture();
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  const int64_t n = static_cast<int64_t>(fixture->inputs.size());
  ASSERT_GE(n, 100);
  auto model = LoadLraClassifier(fixture->dir, OnCuda());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)->backend(), "cuda:0");
  std::vector<std::vector<float>> logits;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE((*model)->Classify(fixture->inputs, &logits).ok());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ListOpsComparison c = CompareWithPyTorch(*fixture, logits);
  const double accuracy = static_cast<double>(c.engine_correct) / n;
  std::cout << "lra_listops fixture on CUDA fp32: max |logit diff| vs PyTorch " << c.max_abs_diff
            << " over " << n << " examples; CUDA accuracy " << accuracy << ", PyTorch "
            << static_cast<double>(c.torch_correct) / n << "; one Classify call " << seconds
            << " s\n";
  EXPECT_TRUE(c.differing_predictions.empty())
      << c.differing_predictions.size() << " predictions differ, the first in example "
      << c.differing_predictions.front();
  EXPECT_LE(c.max_abs_diff, 1e-3);
  EXPECT_EQ(c.engine_correct, c.torch_correct);
  EXPECT_GT(accuracy, 0.2) << "not well above chance (0.1)";

  // The CPU backend on the same inputs, for the record (its own bound is the CPU test's).
  auto cpu = LoadLraClassifier(fixture->dir, {});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  std::vector<std::vector<float>> cpu_logits;
  ASSERT_TRUE((*cpu)->Classify(fixture->inputs, &cpu_logits).ok());
  double cpu_diff = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < fixture->classes; ++k) {
      cpu_diff = std::max<double>(cpu_diff, std::abs(logits[i][k] - cpu_logits[i][k]));
    }
  }
  std::cout << "lra_listops fixture: max |CUDA - CPU| " << cpu_diff << "\n";
  EXPECT_LE(cpu_diff, 1e-3);
}

// A named tiny random checkpoint (tests/tasks/lra_test_checkpoint.h).
struct TinySpec {
  std::string name;
  LraTestSpec spec;
};

constexpr int kVocab = 18;  // the "listops" vocabulary of the test checkpoints

std::unique_ptr<Checkpoint> MakeTinyCheckpoint(const TinySpec& s, uint32_t seed) {
  LraTestCheckpoint c = RandomLraCheckpoint(s.spec, seed);
  return MakeMemoryCheckpoint(std::move(c.config), std::move(c.tensors));
}

// One random document of `positions` positions (2-D models: always an image), pooled over
// its first `pool` positions (0: all).
LraDocument RandomDocument(const LraTestSpec& s, int positions, int pool, std::mt19937& rng) {
  LraDocument doc;
  if (s.image_side > 0)
    positions = s.image_side * (s.image_width > 0 ? s.image_width : s.image_side);
  if (s.channels == 0) {
    std::uniform_int_distribution<int> token(0, kVocab - 1);
    for (int t = 0; t < positions; ++t) doc.tokens.push_back(token(rng));
  } else {
    std::uniform_int_distribution<int> pixel(0, 255);
    for (int i = 0; i < positions * s.channels; ++i) doc.pixels.push_back(pixel(rng));
  }
  doc.pool_length = std::min(pool, positions);
  return doc;
}

std::vector<LraInput> RandomInputs(const LraTestSpec& s, std::mt19937& rng) {
  const int lengths[] = {1, 2, 17, 64, 65, 300, 1000};
  const int pools[] = {0, 1, 5, 0, 64, 0, 999};
  std::vector<LraInput> inputs;
  for (int i = 0; i < 7; ++i) {
    LraInput input;
    input.documents.push_back(RandomDocument(s, lengths[i], pools[i], rng));
    if (s.retrieval) input.documents.push_back(RandomDocument(s, lengths[6 - i], 0, rng));
    inputs.push_back(std::move(input));
  }
  return inputs;
}

std::vector<TinySpec> TinySpecs() {
  auto base = [] {
    LraTestSpec s;
    s.d = 16;
    s.expand_ratio = 4;
    s.glu_expand_ratio = 2;
    s.norm = "layer";
    s.fan_in_scale = true;
    return s;
  };
  std::vector<TinySpec> specs;
  specs.push_back({"hgrn2_1d_embedding_layer_norm", base()});
  LraTestSpec s = base();
  s.mixer = "hgrn1";
  s.d = 12;
  s.norm = "batch";
  s.retrieval = true;
  s.classes = 2;
  s.positional = false;
  specs.push_back({"hgrn1_1d_batch_norm_retrieval", s});
  s = base();
  s.vocab_kind = "";
  s.channels = 3;
  s.image_side = 6;
  s.image_width = 5;
  s.norm = "batch";
  s.d = 8;
  s.expand_ratio = 2;
  specs.push_back({"hgrn2_2d_linear_rgb_batch_norm", s});
  s = base();
  s.mixer = "hgrn1";
  s.vocab_kind = "";
  s.channels = 1;
  s.image_side = 4;
  s.image_width = 7;
  s.d = 6;
  s.classes = 2;
  specs.push_back({"hgrn1_2d_linear_gray", s});
  s = base();
  s.d = 200;
  s.expand_ratio = 8;
  s.glu_expand_ratio = 1;
  s.biases = false;
  s.lower_bound = false;
  s.mixer_norm = false;
  s.layers = 1;
  specs.push_back({"hgrn2_wide_no_bias_no_bound_no_mixer_norm", s});
  for (int e : {1, 16, 32, 40, 128}) {
    s = base();
    s.expand_ratio = e;
    s.d = e == 1 ? 5 : (e == 40 ? 80 : e * 2);
    s.layers = 1;
    specs.push_back({"hgrn2_head_size_" + std::to_string(e), s});
  }
  return specs;
}

TEST(LraClassifierGpuTest, TinyModelsMatchTheCpuBackend) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  uint32_t seed = 100;
  for (const TinySpec& spec : TinySpecs()) {
    SCOPED_TRACE(spec.name);
    auto checkpoint = MakeTinyCheckpoint(spec, ++seed);
    auto cpu = BuildLraClassifier(*checkpoint, {});
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    auto gpu = BuildLraClassifier(*checkpoint, OnCuda());
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    EXPECT_EQ((*gpu)->num_parameters(), (*cpu)->num_parameters());
    std::mt19937 rng(seed);
    const std::vector<LraInput> inputs = RandomInputs(spec.spec, rng);
    std::vector<std::vector<float>> want, got;
    ASSERT_TRUE((*cpu)->Classify(inputs, &want).ok());
    ASSERT_TRUE((*gpu)->Classify(inputs, &got).ok());
    ASSERT_EQ(got.size(), want.size());
    double worst = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].size(), static_cast<size_t>(spec.spec.classes));
      for (int k = 0; k < spec.spec.classes; ++k) {
        const double scale = std::max(1.0, std::abs(static_cast<double>(want[i][k])));
        worst = std::max(worst, std::abs(got[i][k] - want[i][k]) / scale);
        EXPECT_LE(std::abs(got[i][k] - want[i][k]), 1e-4 * scale)
            << "input " << i << " class " << k << ": cuda " << got[i][k] << ", cpu " << want[i][k];
      }
    }
    std::cout << spec.name << ": max relative |CUDA - CPU| " << worst << "\n";
  }
}

bool BitwiseEqual(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(LraClassifierGpuTest, LogitsDoNotDependOnTheBatch) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const std::vector<TinySpec> specs = TinySpecs();
  for (int which : {0, 1, 2}) {  // 1-D, retrieval, 2-D
    const TinySpec& spec = specs[which];
    SCOPED_TRACE(spec.name);
    auto checkpoint = MakeTinyCheckpoint(spec, 7);
    auto model = BuildLraClassifier(*checkpoint, OnCuda());
    ASSERT_TRUE(model.ok()) << model.status();
    std::mt19937 rng(8);
    std::vector<LraInput> inputs = RandomInputs(spec.spec, rng);
    // Enough 4,000-position documents for a second pass (65,536 positions per pass).
    if (spec.spec.image_side == 0) {
      for (int i = 0; i < 20; ++i) {
        LraInput input;
        input.documents.push_back(RandomDocument(spec.spec, 4000, 0, rng));
        if (spec.spec.retrieval) input.documents.push_back(RandomDocument(spec.spec, 3999, 0, rng));
        inputs.push_back(std::move(input));
      }
    }
    std::vector<std::vector<float>> batch, reversed_batch;
    ASSERT_TRUE((*model)->Classify(inputs, &batch).ok());
    std::vector<LraInput> reversed(inputs.rbegin(), inputs.rend());
    ASSERT_TRUE((*model)->Classify(reversed, &reversed_batch).ok());
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<std::vector<float>> alone;
      ASSERT_TRUE((*model)->Classify({inputs[i]}, &alone).ok());
      EXPECT_TRUE(BitwiseEqual(alone[0], batch[i])) << "input " << i << " alone vs in the batch";
      EXPECT_TRUE(BitwiseEqual(alone[0], reversed_batch[inputs.size() - 1 - i]))
          << "input " << i << " alone vs in the reversed batch";
    }
  }
}

// The projections' fallback kernel (used where the pinned cuBLASLt GEMM has no algorithm):
// odd shapes against a double reference, and each row the same alone as among others.
TEST(LraClassifierGpuTest, FallbackLinearKernelMatchesReferenceAndIsRowInvariant) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  struct Shape {
    int m, n, k;
  };
  std::mt19937 rng(21);
  for (const Shape& shape : {Shape{37, 5, 3}, Shape{1, 130, 33}, Shape{70, 17, 64}}) {
    const int m = shape.m, n = shape.n, k = shape.k, ldc = n + 3;  // a strided output
    const HostTensor a = RandomHostTensor({m, k}, rng, 1.0f);
    const HostTensor w = RandomHostTensor({n, k}, rng, 1.0f);
    float *dev_a = nullptr, *dev_w = nullptr, *dev_c = nullptr, *dev_one = nullptr;
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev_a), a.data.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev_w), w.data.size() * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev_c), static_cast<size_t>(m) * ldc * 4),
              cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&dev_one), static_cast<size_t>(n) * 4),
              cudaSuccess);
    cudaMemcpy(dev_a, a.data.data(), a.data.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dev_w, w.data.data(), w.data.size() * 4, cudaMemcpyHostToDevice);
    ASSERT_EQ(cuda::LraLinear(dev_a, k, dev_w, k, m, n, k, dev_c, ldc, nullptr), cudaSuccess);
    std::vector<float> c(static_cast<size_t>(m) * ldc), one(n);
    ASSERT_EQ(cudaMemcpy(c.data(), dev_c, c.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int r = 0; r < m; ++r) {
      for (int o = 0; o < n; ++o) {
        double want = 0.0;
        for (int j = 0; j < k; ++j) want += double{a.data[r * k + j]} * w.data[o * k + j];
        EXPECT_NEAR(c[r * ldc + o], want, 1e-5 * std::max(1.0, std::abs(want))) << r << " " << o;
      }
    }
    const int last = m - 1;  // the last row alone
    ASSERT_EQ(cuda::LraLinear(dev_a + last * k, k, dev_w, k, 1, n, k, dev_one, n, nullptr),
              cudaSuccess);
    ASSERT_EQ(cudaMemcpy(one.data(), dev_one, n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(one.data(), c.data() + last * ldc, n * 4), 0);
    cudaFree(dev_a);
    cudaFree(dev_w);
    cudaFree(dev_c);
    cudaFree(dev_one);
  }
}

TEST(LraClassifierGpuTest, RefusesBadInputsDevicesAndBf16) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible";
  const TinySpec spec = TinySpecs()[0];
  auto checkpoint = MakeTinyCheckpoint(spec, 3);
  auto model = BuildLraClassifier(*checkpoint, OnCuda());
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<LraInput> bad(2);
  bad[0].documents.push_back({{1, 2, 3}, {}, 0});
  bad[1].documents.push_back({{1, kVocab}, {}, 0});
  std::vector<std::vector<float>> logits;
  absl::Status status = (*model)->Classify(bad, &logits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("input 1"), std::string::npos) << status;
  // The model still works afterwards.
  bad.pop_back();
  EXPECT_TRUE((*model)->Classify(bad, &logits).ok());

  LoadOptions missing = OnCuda();
  missing.device = "cuda:4096";
  auto refused = BuildLraClassifier(*checkpoint, missing);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  LoadOptions bf16 = OnCuda();
  bf16.dtype = "bf16";
  refused = BuildLraClassifier(*checkpoint, bf16);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  TinySpec too_wide = spec;
  too_wide.spec.d = 512;
  too_wide.spec.expand_ratio = 256;
  too_wide.spec.layers = 1;
  refused = BuildLraClassifier(*MakeTinyCheckpoint(too_wide, 4), OnCuda());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented) << refused.status();
}

}  // namespace
}  // namespace hgeval::testing
