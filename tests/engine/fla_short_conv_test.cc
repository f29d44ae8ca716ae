// fla ShortConvolution (use_short_conv) in the CPU HGRN2 / HGRN / GLA models. No published
// checkpoint uses it, and the reference fixtures do not either, so the checks are built
// from first principles: the conv against its formula, an identity kernel reproducing the
// plain model bitwise, and the per-sequence conv window carried across Forward calls.
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/cpu/fla_block.h"
#include "engine/cpu/ops.h"
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"

namespace hgeval {
namespace {

HostTensor RandomTensor(std::vector<int64_t> shape, std::mt19937* rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  HostTensor t;
  t.shape = shape;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  t.data.resize(static_cast<size_t>(n));
  for (auto& v : t.data) v = normal(*rng);
  return t;
}

TEST(ShortConvTest, MatchesCausalConvFormulaAndCarriesItsWindow) {
  constexpr int64_t kChannels = 5, kKernel = 4, kTokens = 11;
  std::mt19937 rng(3);
  for (bool silu : {false, true}) {
    for (bool bias : {false, true}) {
      std::map<std::string, HostTensor> tensors;
      tensors["c.weight"] = RandomTensor({kChannels, 1, kKernel}, &rng, 1.0f);
      if (bias) tensors["c.bias"] = RandomTensor({kChannels}, &rng, 1.0f);
      auto checkpoint = MakeMemoryCheckpoint(nlohmann::json::object(), tensors);
      auto conv = cpu::ShortConv::Read(*checkpoint, "c", kChannels, kKernel, silu);
      ASSERT_TRUE(conv.ok()) << conv.status();
      const HostTensor x = RandomTensor({kTokens, kChannels}, &rng, 1.0f);

      // y[t, c] = b[c] + Σ_j w[c, j] · x[t - (K-1) + j, c], x = 0 before the sequence.
      std::vector<float> expected(x.data.size());
      for (int64_t t = 0; t < kTokens; ++t) {
        for (int64_t c = 0; c < kChannels; ++c) {
          double acc = bias ? tensors["c.bias"].data[c] : 0.0;
          for (int64_t j = 0; j < kKernel; ++j) {
            const int64_t src = t - (kKernel - 1) + j;
            if (src >= 0)
              acc +=
                  double{tensors["c.weight"].data[c * kKernel + j]} * x.data[src * kChannels + c];
          }
          expected[t * kChannels + c] =
              static_cast<float>(silu ? acc / (1.0 + std::exp(-acc)) : acc);
        }
      }
      std::vector<float> whole = x.data;
      std::vector<float> window = conv->NewWindow();
      conv->Apply(whole.data(), kTokens, &window);
      for (size_t i = 0; i < whole.size(); ++i) {
        EXPECT_NEAR(whole[i], expected[i], 1e-5) << "silu " << silu << " bias " << bias;
      }
      // In pieces of 1, 2, 3, 5 tokens the window carries the history: bitwise the same.
      std::vector<float> pieces = x.data;
      window = conv->NewWindow();
      int64_t t0 = 0;
      for (int64_t len : {1, 2, 3, 5}) {
        conv->Apply(pieces.data() + t0 * kChannels, len, &window);
        t0 += len;
      }
      ASSERT_EQ(t0, kTokens);
      EXPECT_EQ(pieces, whole);
    }
  }
}

// The golden checkpoint with use_short_conv and the given conv kernels added.
std::unique_ptr<Checkpoint> WithShortConv(const std::string& model,
                                          const std::vector<std::string>& convs, bool identity,
                                          std::mt19937* rng) {
  auto checkpoint = OpenCheckpoint(testing::SourcePath("tests/golden/" + model));
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status();
  if (!checkpoint.ok()) return nullptr;
  absl::StatusOr<std::map<std::string, HostTensor>> read = testing::ReadAllTensors(**checkpoint);
  EXPECT_TRUE(read.ok()) << read.status();
  if (!read.ok()) return nullptr;
  std::map<std::string, HostTensor> tensors = *std::move(read);
  nlohmann::json config = (*checkpoint)->config();
  config["use_short_conv"] = true;
  config["conv_size"] = 4;
  for (int64_t l = 0; l < config["num_hidden_layers"].get<int64_t>(); ++l) {
    for (const std::string& name : convs) {
      const std::string prefix = "model.layers." + std::to_string(l) + ".attn.";
      const int64_t channels = tensors.at(prefix + name + "_proj.weight").shape[0];
      HostTensor w = RandomTensor({channels, 1, 4}, rng, 0.5f);
      if (identity) {
        // Only the current token's tap: the conv passes its input through exactly.
        for (int64_t c = 0; c < channels; ++c) {
          for (int64_t j = 0; j < 4; ++j) w.data[c * 4 + j] = j == 3 ? 1.0f : 0.0f;
        }
      }
      tensors[prefix + name + "_conv1d.weight"] = std::move(w);
    }
  }
  return MakeMemoryCheckpoint(config, std::move(tensors));
}

std::vector<int32_t> Tokens(int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back((i * 97 + 13) % 512);
  return ids;
}

TEST(ShortConvTest, IdentityKernelReproducesThePlainModel) {
  std::mt19937 rng(5);
  for (const auto& [model, convs] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"hgrn2", {"q", "f", "i"}}, {"hgrn", {"i", "f"}}}) {
    auto plain_checkpoint = OpenCheckpoint(testing::SourcePath("tests/golden/" + model));
    ASSERT_TRUE(plain_checkpoint.ok());
    auto plain = testing::BuildOrDie(**plain_checkpoint);
    auto conv_checkpoint = WithShortConv(model, convs, /*identity=*/true, &rng);
    ASSERT_NE(conv_checkpoint, nullptr);
    auto with_conv = testing::BuildOrDie(*conv_checkpoint);
    ASSERT_NE(plain, nullptr);
    ASSERT_NE(with_conv, nullptr);
    EXPECT_GT(with_conv->info().num_parameters, plain->info().num_parameters);
    const std::vector<int32_t> ids = Tokens(70);
    EXPECT_EQ(testing::AllLogits(*with_conv, ids), testing::AllLogits(*plain, ids)) << model;
  }
}

TEST(ShortConvTest, ConvWindowCarriesAcrossForwardCalls) {
  std::mt19937 rng(9);
  for (const auto& [model, convs] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"hgrn2", {"q", "f", "i"}}, {"hgrn", {"i", "f"}}, {"gla", {"q", "k", "v"}}}) {
    SCOPED_TRACE(model);
    auto checkpoint = WithShortConv(model, convs, /*identity=*/false, &rng);
    ASSERT_NE(checkpoint, nullptr);
    auto m = testing::BuildOrDie(*checkpoint);
    ASSERT_NE(m, nullptr);
    const std::vector<int32_t> ids = Tokens(40);
    const std::vector<float> whole = testing::AllLogits(*m, ids);
    // Fed in pieces of 1, 2, 3, ... tokens: the conv must see the previous pieces' inputs.
    auto state = m->NewState();
    std::vector<float> pieces;
    for (size_t t0 = 0, len = 1; t0 < ids.size(); t0 += len, ++len) {
      const size_t n = std::min(len, ids.size() - t0);
      std::vector<int32_t> piece(ids.begin() + t0, ids.begin() + t0 + n);
      ForwardItem item;
      item.tokens = piece;
      item.state = state.get();
      item.want_all_logits = true;
      std::vector<ForwardOutput> out(1);
      ASSERT_TRUE(m->Forward({&item, 1}, absl::MakeSpan(out)).ok());
      pieces.insert(pieces.end(), out[0].logits.begin(), out[0].logits.end());
    }
    // Matrix products round differently for different row counts (~1e-6); a lost conv
    // window moves logits by orders of magnitude more.
    EXPECT_LE(testing::MaxAbsDiff(pieces, whole), 1e-4);
    // And the convs matter: without them the logits differ.
    auto plain_checkpoint = OpenCheckpoint(testing::SourcePath("tests/golden/" + model));
    ASSERT_TRUE(plain_checkpoint.ok());
    auto plain = testing::BuildOrDie(**plain_checkpoint);
    EXPECT_GT(testing::MaxAbsDiff(testing::AllLogits(*plain, ids), whole), 1e-2);
  }
}

}  // namespace
}  // namespace hgeval
