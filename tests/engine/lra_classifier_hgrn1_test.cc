// A tiny 1-D HGRN1 LRA classifier with the retrieval (two-tower) head and length-aware
// pooling, against a direct reference written here: each position's forward and reverse
// complex states as explicit sums of rotated, decayed inputs (no recurrence), in double.
#include <cmath>
#include <complex>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/model/lra_classifier.h"
#include "gtest/gtest.h"
#include "tests/tasks/lra_test_checkpoint.h"

namespace hgeval {
namespace {

constexpr int kD = 4, kVocab = 7, kClasses = 2;

using Tensors = std::map<std::string, HostTensor>;
using Vec = std::vector<double>;

Vec Affine(const Vec& x, const Tensors& w, const std::string& p) {
  const HostTensor& weight = w.at(p + ".weight");
  const int64_t out = weight.shape[0], in = weight.shape[1];
  Vec y(out);
  for (int64_t o = 0; o < out; ++o) {
    y[o] = w.at(p + ".bias").data[o];
    for (int64_t i = 0; i < in; ++i) y[o] += x[i] * weight.data[o * in + i];
  }
  return y;
}

Vec LayerNorm(const Vec& x, const Tensors& w, const std::string& p) {
  double mu = 0, var = 0;
  for (double v : x) mu += v / x.size();
  for (double v : x) var += (v - mu) * (v - mu) / x.size();
  Vec y(x.size());
  for (size_t c = 0; c < x.size(); ++c) {
    y[c] = (x[c] - mu) / std::sqrt(var + 1e-5) * w.at(p + ".weight").data[c] +
           w.at(p + ".bias").data[c];
  }
  return y;
}

double Sig(double x) { return 1 / (1 + std::exp(-x)); }
double Silu(double x) { return x * Sig(x); }

// The pooled final-norm output of one document (one layer, no lower bound for layer 0).
Vec Pooled(const Tensors& w, const std::vector<int32_t>& tokens, int pool) {
  const int T = static_cast<int>(tokens.size());
  std::vector<Vec> x(T, Vec(kD));
  for (int t = 0; t < T; ++t) {
    for (int c = 0; c < kD; ++c) x[t][c] = w.at("encoder.weight").data[tokens[t] * kD + c];
  }
  std::vector<Vec> a(T), in(T), lam(T), gate(T);
  for (int t = 0; t < T; ++t) {
    a[t] = LayerNorm(x[t], w, "layers.0.mixer_norm");
    in[t] = Affine(a[t], w, "layers.0.mixer.input_proj");
    for (double& v : in[t]) v = Silu(v);
    lam[t] = Affine(a[t], w, "layers.0.mixer.lambda_proj");
    for (double& v : lam[t]) v = Sig(v);
    gate[t] = Affine(a[t], w, "layers.0.mixer.gate");
  }
  for (int t = 0; t < T; ++t) {
    Vec feature(2 * kD);
    for (int c = 0; c < kD; ++c) {
      std::complex<double> h = 0;
      for (int dir = 0; dir < 2; ++dir) {
        const double theta =
            w.at(dir == 0 ? "layers.0.mixer.theta_forward" : "layers.0.mixer.theta_reverse")
                .data[c];
        for (int s = 0; s < T; ++s) {
          if (dir == 0 ? s > t : s < t) continue;
          std::complex<double> term((1 - lam[s][c]) * in[s][2 * c],
                                    (1 - lam[s][c]) * in[s][2 * c + 1]);
          for (int r = std::min(s, t) + 1; r <= std::max(s, t); ++r) {
            // Forward: gates after s up to t; reverse: gates from t up to before s.
            const int q = dir == 0 ? r : r - 1;
            term *= std::polar(lam[q][c], theta);
          }
          h += term;
        }
      }
      feature[c] = h.real();
      feature[kD + c] = h.imag();
    }
    feature = LayerNorm(feature, w, "layers.0.mixer.norm");
    for (int k = 0; k < 2 * kD; ++k) feature[k] *= Silu(gate[t][k]);
    const Vec m = Affine(feature, w, "layers.0.mixer.out_proj");
    for (int c = 0; c < kD; ++c) x[t][c] += m[c];
    const Vec n = LayerNorm(x[t], w, "layers.0.glu_norm");
    Vec g1 = Affine(n, w, "layers.0.glu.l1"), g2 = Affine(n, w, "layers.0.glu.l2");
    for (int k = 0; k < kD; ++k) g1[k] = Silu(g1[k]) * g2[k];
    const Vec g = Affine(g1, w, "layers.0.glu.l3");
    for (int c = 0; c < kD; ++c) x[t][c] += g[c];
  }
  Vec pooled(kD, 0.0);
  for (int t = 0; t < pool; ++t) {
    const Vec f = LayerNorm(x[t], w, "final_norm");
    for (int c = 0; c < kD; ++c) pooled[c] += f[c] / pool;
  }
  return pooled;
}

TEST(LraClassifierHgrn1Test, BidirectionalComplexScanAndRetrievalHeadEqualDirectSums) {
  std::mt19937 rng(11);
  Tensors w;
  auto norm = [&](const std::string& p, int64_t n) {
    w[p + ".weight"] = testing::RandomHostTensor({n}, rng, 0.3f, 1.0f);
    w[p + ".bias"] = testing::RandomHostTensor({n}, rng, 0.3f);
  };
  auto linear = [&](const std::string& p, int64_t out, int64_t in) {
    w[p + ".weight"] = testing::RandomHostTensor({out, in}, rng, 0.7f);
    w[p + ".bias"] = testing::RandomHostTensor({out}, rng, 0.2f);
  };
  w["encoder.weight"] = testing::RandomHostTensor({kVocab, kD}, rng, 1.0f);
  norm("layers.0.mixer_norm", kD);
  norm("layers.0.glu_norm", kD);
  linear("layers.0.mixer.input_proj", 2 * kD, kD);
  linear("layers.0.mixer.lambda_proj", kD, kD);
  linear("layers.0.mixer.gate", 2 * kD, kD);
  norm("layers.0.mixer.norm", 2 * kD);
  linear("layers.0.mixer.out_proj", kD, 2 * kD);
  w["layers.0.mixer.theta_forward"] = testing::RandomHostTensor({kD}, rng, 1.5f);
  w["layers.0.mixer.theta_reverse"] = testing::RandomHostTensor({kD}, rng, 1.5f);
  linear("layers.0.glu.l1", kD, kD);
  linear("layers.0.glu.l2", kD, kD);
  linear("layers.0.glu.l3", kD, kD);
  norm("final_norm", kD);
  linear("head.fc1", kD, 4 * kD);
  linear("head.fc2", kClasses, kD);
  nlohmann::json config = {
      {"model_type", "lra_classifier"}, {"mixer", "hgrn1"},    {"encoder", "embedding"},
      {"vocab_size", kVocab},           {"hidden_size", kD},   {"num_layers", 1},
      {"use_lower_bound", false},       {"head", "retrieval"}, {"num_classes", kClasses}};
  auto checkpoint = MakeMemoryCheckpoint(config, w);
  auto model = BuildLraClassifier(*checkpoint, LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();

  const std::vector<int32_t> first = {1, 4, 2, 6, 0, 0}, second = {3, 5, 5, 2, 1};
  LraInput input;
  input.documents.push_back({first, {}, 4});  // two pad tokens, pooled over 4 positions
  input.documents.push_back({second, {}, 0});
  std::vector<std::vector<float>> logits;
  ASSERT_TRUE((*model)->Classify({input}, &logits).ok());

  const Vec u = Pooled(w, first, 4), v = Pooled(w, second, 5);
  Vec features;
  for (int c = 0; c < kD; ++c) features.push_back(u[c]);
  for (int c = 0; c < kD; ++c) features.push_back(v[c]);
  for (int c = 0; c < kD; ++c) features.push_back(u[c] - v[c]);
  for (int c = 0; c < kD; ++c) features.push_back(u[c] * v[c]);
  Vec hidden = Affine(features, w, "head.fc1");
  for (double& h : hidden) h = 0.5 * h * (1 + std::erf(h / std::sqrt(2.0)));
  const Vec expected = Affine(hidden, w, "head.fc2");
  ASSERT_EQ(logits[0].size(), static_cast<size_t>(kClasses));
  for (int k = 0; k < kClasses; ++k) EXPECT_NEAR(logits[0][k], expected[k], 1e-5) << k;

  // One document given to a two-tower model, and a pool length past the input.
  LraInput one;
  one.documents.push_back({first, {}, 0});
  EXPECT_EQ((*model)->Classify({one}, &logits).code(), absl::StatusCode::kInvalidArgument);
  input.documents[0].pool_length = 7;
  EXPECT_EQ((*model)->Classify({input}, &logits).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hgeval
