// A tiny 2-D HGRN2 LRA classifier (3x4 image, 2 channels, d 4, heads of 2, two layers,
// lower bounds, batch norm, positions) against a direct reference written here
// independently of the engine: every position's four-direction state as an explicit sum
// over the positions of its row and column (products of gates, no recurrence), in double.
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/model/lra_classifier.h"
#include "gtest/gtest.h"
#include "tests/tasks/lra_test_checkpoint.h"

namespace hgeval {
namespace {

constexpr int kH = 3, kW = 4, kC = 2, kD = 4, kE = 2, kLayers = 2, kClasses = 3, kGlu = 8;

using Tensors = std::map<std::string, HostTensor>;

using Mat = std::vector<std::vector<double>>;  // [T][width]

Mat Affine(const Mat& x, const Tensors& w, const std::string& prefix) {
  const HostTensor& weight = w.at(prefix + ".weight");
  const HostTensor& bias = w.at(prefix + ".bias");
  const int64_t out = weight.shape[0], in = weight.shape[1];
  Mat y(x.size(), std::vector<double>(out));
  for (size_t t = 0; t < x.size(); ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias.data[o];
      for (int64_t i = 0; i < in; ++i) acc += x[t][i] * weight.data[o * in + i];
      y[t][o] = acc;
    }
  }
  return y;
}

Mat BatchNorm(const Mat& x, const Tensors& w, const std::string& prefix) {
  Mat y = x;
  for (auto& row : y) {
    for (size_t c = 0; c < row.size(); ++c) {
      row[c] = (row[c] - w.at(prefix + ".running_mean").data[c]) /
                   std::sqrt(w.at(prefix + ".running_var").data[c] + 1e-5) *
                   w.at(prefix + ".weight").data[c] +
               w.at(prefix + ".bias").data[c];
    }
  }
  return y;
}

Mat LayerNorm(const Mat& x, const Tensors& w, const std::string& prefix) {
  Mat y = x;
  for (auto& row : y) {
    double mu = 0, var = 0;
    for (double v : row) mu += v / row.size();
    for (double v : row) var += (v - mu) * (v - mu) / row.size();
    for (size_t c = 0; c < row.size(); ++c) {
      row[c] = (row[c] - mu) / std::sqrt(var + 1e-5) * w.at(prefix + ".weight").data[c] +
               w.at(prefix + ".bias").data[c];
    }
  }
  return y;
}

double Sig(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<double> Reference(const Tensors& w, const std::vector<float>& pixels) {
  const int T = kH * kW;
  Mat x(T, std::vector<double>(kC));
  for (int t = 0; t < T; ++t) {
    for (int c = 0; c < kC; ++c) x[t][c] = (pixels[t * kC + c] / 255.0 - 0.5) / 0.25;
  }
  x = Affine(x, w, "encoder");
  for (int t = 0; t < T; ++t) {
    for (int c = 0; c < kD; ++c) {
      const double freq = std::pow(10000.0, -static_cast<double>(c / 2 * 2) / kD);
      x[t][c] += c % 2 == 0 ? std::sin(t * freq) : std::cos(t * freq);
    }
  }
  // Lower bounds: softmax over layers, cumsum minus the first row.
  const HostTensor& raw = w.at("lower_bounds");
  std::vector<std::vector<double>> lb(kLayers, std::vector<double>(kD));
  for (int c = 0; c < kD; ++c) {
    double z = 0;
    for (int l = 0; l < kLayers; ++l) z += std::exp(raw.data[l * kD + c]);
    double cum = 0;
    for (int l = 0; l < kLayers; ++l) {
      if (l > 0) cum += std::exp(raw.data[l * kD + c]) / z;
      lb[l][c] = cum;
    }
  }
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    Mat f = Affine(BatchNorm(x, w, p + ".mixer_norm"), w, p + ".mixer.in_proj");
    // The same-row / same-column positions s "before" t in a direction, and the product
    // of gates strictly after s up to t: state(t) = sum_s prod(lambda) (1 - lambda_s) i_s.
    Mat y(T, std::vector<double>(kD, 0.0));
    for (int t = 0; t < T; ++t) {
      const int tr = t / kW, tc = t % kW;
      std::vector<std::vector<int>> paths;  // each: positions from s (first) to t (last)
      for (int s = 0; s < T; ++s) {
        const int sr = s / kW, sc = s % kW;
        std::vector<int> path;
        if (sr == tr && sc <= tc) {
          for (int c = sc; c <= tc; ++c) path.push_back(tr * kW + c);
          paths.push_back(path);
        }
        path.clear();
        if (sr == tr && sc >= tc) {
          for (int c = sc; c >= tc; --c) path.push_back(tr * kW + c);
          paths.push_back(path);
        }
        path.clear();
        if (sc == tc && sr <= tr) {
          for (int r = sr; r <= tr; ++r) path.push_back(r * kW + tc);
          paths.push_back(path);
        }
        path.clear();
        if (sc == tc && sr >= tr) {
          for (int r = sr; r >= tr; --r) path.push_back(r * kW + tc);
          paths.push_back(path);
        }
      }
      for (int h = 0; h < kD / kE; ++h) {
        for (int b = 0; b < kE; ++b) {  // value index
          double out = 0;
          for (int a = 0; a < kE; ++a) {  // key index
            const int ch = h * kE + a;
            auto lambda = [&](int pos) {
              return lb[l][ch] + (1 - lb[l][ch]) * Sig(f[pos][2 * kD + ch]);
            };
            double state = 0;
            for (const auto& path : paths) {
              const int s = path.front();
              double decay = 1;
              for (size_t k = 1; k < path.size(); ++k) decay *= lambda(path[k]);
              const double input = f[s][h * kE + b] / (1 + std::exp(-f[s][h * kE + b]));
              state += decay * (1 - lambda(s)) * input;
            }
            out += Sig(f[t][kD + ch]) * state;
          }
          y[t][h * kE + b] = out;
        }
      }
    }
    Mat m = Affine(LayerNorm(y, w, p + ".mixer.norm"), w, p + ".mixer.out_proj");
    for (int t = 0; t < T; ++t) {
      for (int c = 0; c < kD; ++c) x[t][c] += m[t][c];
    }
    Mat n = BatchNorm(x, w, p + ".glu_norm");
    Mat a = Affine(n, w, p + ".glu.l1"), b = Affine(n, w, p + ".glu.l2");
    for (int t = 0; t < T; ++t) {
      for (int k = 0; k < kGlu; ++k) a[t][k] = a[t][k] * Sig(a[t][k]) * b[t][k];
    }
    Mat g = Affine(a, w, p + ".glu.l3");
    for (int t = 0; t < T; ++t) {
      for (int c = 0; c < kD; ++c) x[t][c] += g[t][c];
    }
  }
  x = BatchNorm(x, w, "final_norm");
  Mat pooled(1, std::vector<double>(kD, 0.0));
  for (int t = 0; t < T; ++t) {
    for (int c = 0; c < kD; ++c) pooled[0][c] += x[t][c] / T;
  }
  return Affine(pooled, w, "head")[0];
}

TEST(LraClassifier2dTest, FourDirectionScanEqualsDirectSum) {
  std::mt19937 rng(7);
  Tensors w;
  auto norm = [&](const std::string& p) {
    w[p + ".weight"] = testing::RandomHostTensor({kD}, rng, 0.3f, 1.0f);
    w[p + ".bias"] = testing::RandomHostTensor({kD}, rng, 0.3f);
    w[p + ".running_mean"] = testing::RandomHostTensor({kD}, rng, 0.5f);
    w[p + ".running_var"] = testing::RandomHostTensor({kD}, rng, 0.4f, 1.0f);
  };
  w["encoder.weight"] = testing::RandomHostTensor({kD, kC}, rng, 0.8f);
  w["encoder.bias"] = testing::RandomHostTensor({kD}, rng, 0.2f);
  w["lower_bounds"] = testing::RandomHostTensor({kLayers, kD}, rng, 1.0f);
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "layers." + std::to_string(l);
    norm(p + ".mixer_norm");
    norm(p + ".glu_norm");
    w[p + ".mixer.in_proj.weight"] = testing::RandomHostTensor({3 * kD, kD}, rng, 0.8f);
    w[p + ".mixer.in_proj.bias"] = testing::RandomHostTensor({3 * kD}, rng, 0.3f);
    w[p + ".mixer.norm.weight"] = testing::RandomHostTensor({kD}, rng, 0.3f, 1.0f);
    w[p + ".mixer.norm.bias"] = testing::RandomHostTensor({kD}, rng, 0.3f);
    w[p + ".mixer.out_proj.weight"] = testing::RandomHostTensor({kD, kD}, rng, 0.6f);
    w[p + ".mixer.out_proj.bias"] = testing::RandomHostTensor({kD}, rng, 0.2f);
    w[p + ".glu.l1.weight"] = testing::RandomHostTensor({kGlu, kD}, rng, 0.6f);
    w[p + ".glu.l1.bias"] = testing::RandomHostTensor({kGlu}, rng, 0.2f);
    w[p + ".glu.l2.weight"] = testing::RandomHostTensor({kGlu, kD}, rng, 0.6f);
    w[p + ".glu.l2.bias"] = testing::RandomHostTensor({kGlu}, rng, 0.2f);
    w[p + ".glu.l3.weight"] = testing::RandomHostTensor({kD, kGlu}, rng, 0.6f);
    w[p + ".glu.l3.bias"] = testing::RandomHostTensor({kD}, rng, 0.2f);
  }
  norm("final_norm");
  w["head.weight"] = testing::RandomHostTensor({kClasses, kD}, rng, 0.8f);
  w["head.bias"] = testing::RandomHostTensor({kClasses}, rng, 0.2f);
  nlohmann::json config = {{"model_type", "lra_classifier"},
                           {"mixer", "hgrn2"},
                           {"encoder", "linear"},
                           {"input_channels", kC},
                           {"hidden_size", kD},
                           {"num_layers", kLayers},
                           {"expand_ratio", kE},
                           {"glu_expand_ratio", kGlu / kD},
                           {"norm", "batch"},
                           {"positional", true},
                           {"scan", "2d"},
                           {"image_height", kH},
                           {"image_width", kW},
                           {"num_classes", kClasses},
                           {"input_mean", {0.5, 0.5}},
                           {"input_std", {0.25, 0.25}}};
  auto checkpoint = MakeMemoryCheckpoint(config, w);
  auto model = BuildLraClassifier(*checkpoint, LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();

  std::vector<LraInput> inputs(2);
  std::uniform_int_distribution<int> pixel(0, 255);
  for (LraInput& input : inputs) {
    LraDocument doc;
    for (int i = 0; i < kH * kW * kC; ++i) doc.pixels.push_back(pixel(rng));
    input.documents.push_back(doc);
  }
  std::vector<std::vector<float>> logits;
  ASSERT_TRUE((*model)->Classify(inputs, &logits).ok());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<double> expected = Reference(w, inputs[i].documents[0].pixels);
    ASSERT_EQ(logits[i].size(), static_cast<size_t>(kClasses));
    for (int k = 0; k < kClasses; ++k)
      EXPECT_NEAR(logits[i][k], expected[k], 1e-5) << i << " " << k;
  }

  // The image must have height x width positions.
  std::vector<LraInput> wrong(1);
  wrong[0].documents.push_back({{}, std::vector<float>(2 * kC, 1.0f), 0});
  auto status = (*model)->Classify(wrong, &logits);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("3x4"), std::string::npos);
  // Without a usable GPU (no CUDA backend in the build, or none visible) a cuda device is
  // refused with a clear message; with one, tests/cuda/lra_classifier_gpu_test covers it.
  if (!CudaAvailable()) {
    LoadOptions cuda;
    cuda.device = "cuda";
    auto refused = BuildLraClassifier(*checkpoint, cuda);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(refused.status().message().find("use --device cpu"), std::string::npos)
        << refused.status();
  }
  // Both backends compute in fp32 only.
  LoadOptions bf16;
  bf16.dtype = "bf16";
  auto refused_dtype = BuildLraClassifier(*checkpoint, bf16);
  EXPECT_EQ(refused_dtype.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused_dtype.status().message().find("fp32 only"), std::string::npos);
}

}  // namespace
}  // namespace hgeval
