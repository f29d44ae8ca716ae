// BlockTensorNamesFor / ReadBlockMlp (engine/model/tensor_names.h): the checkpoint names
// both backends read a family's block skeleton by.
#include "engine/model/tensor_names.h"

#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace hgeval {
namespace {

HostTensor Tensor(std::vector<int64_t> shape, float value) {
  HostTensor t;
  t.shape = shape;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  t.data.assign(n, value);
  return t;
}

ModelConfig Config(ModelFamily family) {
  ModelConfig c;
  c.family = family;
  c.hidden_size = 4;
  c.intermediate_size = 6;
  return c;
}

TEST(TensorNamesTest, FlaFamiliesAndFlaLlamaShareFlaNames) {
  auto ck = MakeMemoryCheckpoint(nlohmann::json::object(), {});
  ModelConfig llama = Config(ModelFamily::kLlama);
  llama.fla_key_names = true;
  for (const ModelConfig& c : {Config(ModelFamily::kHgrn2), Config(ModelFamily::kGla), llama}) {
    const BlockTensorNames names = BlockTensorNamesFor(*ck, c);
    EXPECT_EQ(names.embed, "model.embeddings.weight");
    EXPECT_EQ(names.Norm1Weight(2), "model.layers.2.attn_norm.weight");
    EXPECT_EQ(names.Norm2Weight(2), "model.layers.2.mlp_norm.weight");
    EXPECT_EQ(names.MixerPrefix(2), "model.layers.2.attn.");
    EXPECT_EQ(names.final_norm, "model.norm.weight");
    EXPECT_EQ(names.head, "lm_head.weight");
  }
  const BlockTensorNames hf = BlockTensorNamesFor(*ck, Config(ModelFamily::kLlama));
  EXPECT_EQ(hf.embed, "model.embed_tokens.weight");
  EXPECT_EQ(hf.Norm1Weight(0), "model.layers.0.input_layernorm.weight");
  EXPECT_EQ(hf.MixerPrefix(0), "model.layers.0.self_attn.");
}

TEST(TensorNamesTest, MambaAcceptsTheLegacyEmbeddingName) {
  const ModelConfig mamba = Config(ModelFamily::kMamba);
  auto legacy = MakeMemoryCheckpoint(nlohmann::json::object(),
                                     {{"backbone.embedding.weight", Tensor({8, 4}, 1)}});
  EXPECT_EQ(BlockTensorNamesFor(*legacy, mamba).embed, "backbone.embedding.weight");
  auto both = MakeMemoryCheckpoint(nlohmann::json::object(),
                                   {{"backbone.embedding.weight", Tensor({8, 4}, 1)},
                                    {"backbone.embeddings.weight", Tensor({8, 4}, 1)}});
  const BlockTensorNames names = BlockTensorNamesFor(*both, mamba);
  EXPECT_EQ(names.embed, "backbone.embeddings.weight");
  EXPECT_EQ(names.MixerPrefix(1), "backbone.layers.1.mixer.");
  EXPECT_TRUE(names.norm2.empty());  // no MLP
}

TEST(TensorNamesTest, TnlReadsItsGluAsTheGatedMlp) {
  const ModelConfig tnl = Config(ModelFamily::kTnl);
  auto ck = MakeMemoryCheckpoint(nlohmann::json::object(),
                                 {{"model.layers.0.channel_mixer.l1.weight", Tensor({6, 4}, 1)},
                                  {"model.layers.0.channel_mixer.l2.weight", Tensor({6, 4}, 2)},
                                  {"model.layers.0.channel_mixer.l3.weight", Tensor({4, 6}, 3)}});
  const BlockTensorNames names = BlockTensorNamesFor(*ck, tnl);
  EXPECT_TRUE(names.final_norm.empty());  // SimpleRMSNorm has no weight
  EXPECT_EQ(names.MixerPrefix(0), "model.layers.0.token_mixer.");
  absl::StatusOr<GatedMlpWeights> mlp = ReadBlockMlp(*ck, tnl, 0);
  ASSERT_TRUE(mlp.ok()) << mlp.status();
  EXPECT_EQ(mlp->gate.data[0], 1.0f);
  EXPECT_EQ(mlp->up.data[0], 2.0f);
  EXPECT_EQ(mlp->down.shape, (std::vector<int64_t>{4, 6}));
  // A wrong shape is refused, naming the tensor.
  ModelConfig wider = tnl;
  wider.intermediate_size = 7;
  absl::StatusOr<GatedMlpWeights> bad = ReadBlockMlp(*ck, wider, 0);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("channel_mixer.l1.weight"), std::string::npos);
}

}  // namespace
}  // namespace hgeval
