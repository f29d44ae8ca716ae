// OpenCheckpoint / WriteSafetensors / MakeMemoryCheckpoint / weight_reader on well-formed
// checkpoints: round trips in every dtype, shards, tied heads, legacy fused MLP, the golden
// fixtures.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "engine/loader/checkpoint.h"
#include "engine/loader/content_hash.h"
#include "engine/loader/weight_reader.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

namespace fs = std::filesystem;

HostTensor MakeTensor(std::vector<int64_t> shape, std::vector<float> data) {
  return HostTensor{std::move(shape), std::move(data)};
}

HostTensor RandomTensor(std::vector<int64_t> shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  HostTensor t;
  t.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  t.data.resize(n);
  for (float& v : t.data) v = normal(rng);
  return t;
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

const nlohmann::json kTinyConfig = {{"model_type", "llama"}, {"hidden_size", 4}};

std::string WriteFolder(const std::string& tag, const std::map<std::string, HostTensor>& tensors,
                        DType dtype, const nlohmann::json& config = kTinyConfig) {
  const std::string dir = testing::MakeTempDir(tag);
  WriteText(dir + "/config.json", config.dump(2));
  EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", tensors, dtype).ok());
  return dir;
}

TEST(CheckpointLoaderTest, F32RoundTripIsExact) {
  std::map<std::string, HostTensor> tensors = {
      {"a.weight", RandomTensor({3, 5}, 1)},
      {"b", RandomTensor({7}, 2)},
      {"scalar", MakeTensor({}, {3.25f})},
      {"empty", MakeTensor({0, 4}, {})},
  };
  const std::string dir = WriteFolder("f32", tensors, DType::kF32);
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ((*checkpoint)->config()["hidden_size"], 4);
  EXPECT_EQ((*checkpoint)->TensorNames(),
            (std::vector<std::string>{"a.weight", "b", "empty", "scalar"}));
  for (const auto& [name, expected] : tensors) {
    auto read = (*checkpoint)->ReadFloat(name, expected.shape);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(read->shape, expected.shape);
    EXPECT_EQ(read->data, expected.data) << name;
    auto info = (*checkpoint)->Info(name);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->dtype, DType::kF32);
    EXPECT_EQ(info->file, dir + "/model.safetensors");
    auto raw = (*checkpoint)->RawBytes(name);
    ASSERT_TRUE(raw.ok());
    EXPECT_EQ(raw->size(), expected.data.size() * 4);
  }
  // An empty expected shape skips the check.
  EXPECT_TRUE((*checkpoint)->ReadFloat("a.weight", {}).ok());
}

TEST(CheckpointLoaderTest, HeaderIsPaddedToEightBytesAndSorted) {
  const std::string dir =
      WriteFolder("pad", {{"zz", RandomTensor({3}, 1)}, {"a", RandomTensor({1}, 2)}}, DType::kBF16);
  std::ifstream in(dir + "/model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | uint8_t(bytes[i]);
  EXPECT_EQ(header_size % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_size + 2 * 4);
  const std::string header = bytes.substr(8, header_size);
  EXPECT_LT(header.find("\"a\""), header.find("\"zz\""));
  EXPECT_NE(header.find("\"dtype\":\"BF16\""), std::string::npos);
}

TEST(CheckpointLoaderTest, Bf16RoundTripExactForRepresentableValues) {
  // Values with at most 8 significant bits, plus extremes.
  std::vector<float> values = {
      0.0f,     -0.0f,   1.0f,          -2.5f,
      0.15625f, 3.0e38f, 1.5f * 1e-38f, std::ldexp(1.0f, -133) /* subnormal with 1 bit */,
      255.0f};
  for (float& v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    bits &= 0xffff0000u;  // make it exactly bf16-representable
    std::memcpy(&v, &bits, 4);
  }
  const std::string dir =
      WriteFolder("bf16", {{"w", MakeTensor({int64_t(values.size())}, values)}}, DType::kBF16);
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto read = (*checkpoint)->ReadFloat("w", {int64_t(values.size())});
  ASSERT_TRUE(read.ok()) << read.status();
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_EQ(std::signbit(read->data[i]), std::signbit(values[i])) << i;
    EXPECT_EQ(read->data[i], values[i]) << i;
  }
  EXPECT_EQ((*checkpoint)->Info("w")->dtype, DType::kBF16);
  EXPECT_EQ((*checkpoint)->RawBytes("w")->size(), values.size() * 2);
}

TEST(CheckpointLoaderTest, Bf16RoundsToNearestEven) {
  // bf16 has 8 significant bits: around 1.0 the step is 2^-7.
  const float step = std::ldexp(1.0f, -7);
  const std::vector<float> in = {
      1.0f + step / 2,                          // tie -> even (1.0)
      1.0f + step + step / 2,                   // tie -> even (1 + 2 step)
      1.0f + step / 2 + std::ldexp(1.0f, -20),  // just above the tie -> up
      1.0f + step / 2 - std::ldexp(1.0f, -20),  // just below -> down
      -(1.0f + step + step / 2),                // negative tie -> even
      3.3895314e38f,                            // bf16 max, exact
      0.1f,                                     // 0x3DCCCCCD -> 0x3DCD
  };
  const std::vector<float> expected = {
      1.0f, 1.0f + 2 * step, 1.0f + step, 1.0f, -(1.0f + 2 * step), 3.3895314e38f, 0.10009765625f};
  const std::string dir = WriteFolder("bf16r", {{"w", MakeTensor({7}, in)}}, DType::kBF16);
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto read = (*checkpoint)->ReadFloat("w", {7});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->data, expected);
}

TEST(CheckpointLoaderTest, F16RoundTripIncludingSubnormalsAndRounding) {
  const float tiny = std::ldexp(1.0f, -24);  // smallest f16 subnormal
  const std::vector<float> in = {1.0f,
                                 -2.0f,
                                 65504.0f,
                                 65519.0f /* rounds down to max */,
                                 0.333333343f,
                                 tiny,
                                 3 * tiny,
                                 tiny / 2 /* tie -> 0 */,
                                 1.5f * tiny /* tie -> 2 tiny */,
                                 tiny * 0.75f /* above half -> tiny */,
                                 std::ldexp(1.0f, -14) /* min normal */,
                                 std::ldexp(1023.0f, -24) /* max subnormal */,
                                 1.0f + std::ldexp(1.0f, -11) /* tie -> 1 */,
                                 1.0f + 3 * std::ldexp(1.0f, -11)};
  const std::vector<float> expected = {1.0f,
                                       -2.0f,
                                       65504.0f,
                                       65504.0f,
                                       0.333251953125f,
                                       tiny,
                                       3 * tiny,
                                       0.0f,
                                       2 * tiny,
                                       tiny,
                                       std::ldexp(1.0f, -14),
                                       std::ldexp(1023.0f, -24),
                                       1.0f,
                                       1.0f + 4 * std::ldexp(1.0f, -11)};
  const std::string dir =
      WriteFolder("f16", {{"w", MakeTensor({int64_t(in.size())}, in)}}, DType::kF16);
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto read = (*checkpoint)->ReadFloat("w", {int64_t(in.size())});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->data, expected);
  EXPECT_EQ((*checkpoint)->Info("w")->dtype, DType::kF16);
}

TEST(CheckpointLoaderTest, F16OverflowIsRejectedAsInf) {
  // 65520 rounds to inf in f16; the reader then refuses the non-finite weight.
  const std::string dir =
      WriteFolder("f16inf", {{"w", MakeTensor({2}, {1.0f, 65520.0f})}}, DType::kF16);
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto read = (*checkpoint)->ReadFloat("w", {2});
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(read.status().message().find("'w'"), std::string::npos);
  EXPECT_NE(read.status().message().find("inf"), std::string::npos);
}

TEST(CheckpointLoaderTest, ShardedIndex) {
  const std::string dir = testing::MakeTempDir("sharded");
  WriteText(dir + "/config.json", kTinyConfig.dump());
  HostTensor a = RandomTensor({2, 3}, 5), b = RandomTensor({4}, 6), c = RandomTensor({1, 1}, 7);
  ASSERT_TRUE(
      WriteSafetensors(dir + "/model-00001-of-00002.safetensors", {{"a", a}, {"b", b}}, DType::kF32)
          .ok());
  ASSERT_TRUE(
      WriteSafetensors(dir + "/model-00002-of-00002.safetensors", {{"c", c}}, DType::kBF16).ok());
  nlohmann::json index = {{"metadata", {{"total_size", 44}}},
                          {"weight_map",
                           {{"a", "model-00001-of-00002.safetensors"},
                            {"b", "model-00001-of-00002.safetensors"},
                            {"c", "model-00002-of-00002.safetensors"}}}};
  WriteText(dir + "/model.safetensors.index.json", index.dump());
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ((*checkpoint)->TensorNames(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ((*checkpoint)->ReadFloat("a", {2, 3})->data, a.data);
  EXPECT_EQ((*checkpoint)->ReadFloat("b", {4})->data, b.data);
  EXPECT_EQ((*checkpoint)->Info("c")->file, dir + "/model-00002-of-00002.safetensors");
  EXPECT_EQ((*checkpoint)->Info("c")->dtype, DType::kBF16);
  EXPECT_NEAR((*checkpoint)->ReadFloat("c", {1, 1})->data[0], c.data[0], std::abs(c.data[0]) / 128);
}

TEST(CheckpointLoaderTest, ShardedIndexTensorInWrongShardIsAnError) {
  const std::string dir = testing::MakeTempDir("wrongshard");
  WriteText(dir + "/config.json", kTinyConfig.dump());
  ASSERT_TRUE(
      WriteSafetensors(dir + "/s1.safetensors", {{"a", RandomTensor({2}, 1)}}, DType::kF32).ok());
  ASSERT_TRUE(
      WriteSafetensors(dir + "/s2.safetensors", {{"b", RandomTensor({2}, 1)}}, DType::kF32).ok());
  WriteText(
      dir + "/model.safetensors.index.json",
      nlohmann::json{{"weight_map", {{"a", "s2.safetensors"}, {"b", "s2.safetensors"}}}}.dump());
  auto checkpoint = OpenCheckpoint(dir);
  ASSERT_EQ(checkpoint.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(checkpoint.status().message().find("'a'"), std::string::npos);
  EXPECT_NE(checkpoint.status().message().find("s2.safetensors"), std::string::npos);
}

TEST(CheckpointLoaderTest, MemoryCheckpoint) {
  HostTensor w = RandomTensor({2, 2}, 3);
  auto checkpoint = MakeMemoryCheckpoint(kTinyConfig, {{"w", w}, {"bad", MakeTensor({3}, {1})}});
  EXPECT_EQ(checkpoint->source(), "<memory>");
  EXPECT_EQ(checkpoint->config()["hidden_size"], 4);
  EXPECT_TRUE(checkpoint->Has("w"));
  EXPECT_FALSE(checkpoint->Has("x"));
  EXPECT_EQ(checkpoint->ReadFloat("w", {2, 2})->data, w.data);
  EXPECT_EQ(checkpoint->Info("w")->file, "<memory>");
  auto bad = checkpoint->ReadFloat("bad", {3});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'bad'"), std::string::npos);
  auto missing = checkpoint->ReadFloat("x", {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  auto wrong_shape = checkpoint->ReadFloat("w", {4});
  EXPECT_EQ(wrong_shape.status().code(), absl::StatusCode::kInvalidArgument);
  // Zero-element tensors (their storage pointer may be null) read and hash fine.
  auto with_empty = MakeMemoryCheckpoint(kTinyConfig, {{"e", MakeTensor({0, 3}, {})}});
  auto empty = with_empty->ReadFloat("e", {0, 3});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->numel(), 0);
  EXPECT_EQ(with_empty->RawBytes("e")->size(), 0u);
  EXPECT_EQ(with_empty->ContentHash().size(), 32u);
}

TEST(CheckpointLoaderTest, ContentHashIsStableAndSensitive) {
  std::map<std::string, HostTensor> tensors = {{"w", MakeTensor({2}, {1.0f, 2.0f})}};
  const std::string dir1 = WriteFolder("hash1", tensors, DType::kF32);
  const std::string dir2 = WriteFolder("hash2", tensors, DType::kF32);
  tensors["w"].data[1] = 2.0000002f;
  const std::string dir3 = WriteFolder("hash3", tensors, DType::kF32);
  const std::string h1 = (*OpenCheckpoint(dir1))->ContentHash();
  EXPECT_EQ(h1.size(), 32u);
  EXPECT_EQ(h1, (*OpenCheckpoint(dir2))->ContentHash());
  EXPECT_NE(h1, (*OpenCheckpoint(dir3))->ContentHash());
  // A different config changes the hash too.
  const std::string dir4 = WriteFolder("hash4", {{"w", MakeTensor({2}, {1.0f, 2.0f})}}, DType::kF32,
                                       {{"model_type", "gla"}});
  EXPECT_NE(h1, (*OpenCheckpoint(dir4))->ContentHash());
  // Pinned value: the digest must not change between runs, machines or releases (it keys
  // stored results). Computed from this exact memory checkpoint.
  auto memory = MakeMemoryCheckpoint({{"a", 1}}, {{"w", MakeTensor({2}, {1.0f, 2.0f})}});
  EXPECT_EQ(memory->ContentHash(), memory->ContentHash());
  EXPECT_EQ(memory->ContentHash(), "b6724db7baf44ebeaf4f905b4da855d6");
}

TEST(ContentHasherTest, StreamingEqualsOneShotAndPinned) {
  std::string bytes(1000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 3);
  ContentHasher whole;
  whole.Update(bytes);
  for (size_t piece : {1, 5, 31, 32, 33, 999}) {
    ContentHasher pieces;
    for (size_t i = 0; i < bytes.size(); i += piece) {
      pieces.Update(std::string_view(bytes).substr(i, piece));
    }
    EXPECT_EQ(pieces.HexDigest(), whole.HexDigest()) << piece;
  }
  ContentHasher shorter;
  shorter.Update(std::string_view(bytes).substr(0, 999));
  EXPECT_NE(shorter.HexDigest(), whole.HexDigest());
  ContentHasher empty;
  EXPECT_EQ(empty.HexDigest(), "4aa0d16f6201fa0af7d6eba84f6b0e7d");
}

TEST(WeightReaderTest, SplitAndLegacyFusedMlpGiveTheSameWeights) {
  const int64_t inter = 3, hidden = 2;
  HostTensor gate = RandomTensor({inter, hidden}, 1), up = RandomTensor({inter, hidden}, 2),
             down = RandomTensor({hidden, inter}, 3);
  HostTensor fused{{2 * inter, hidden}, gate.data};
  fused.data.insert(fused.data.end(), up.data.begin(), up.data.end());
  auto split = MakeMemoryCheckpoint(kTinyConfig, {{"m.mlp.gate_proj.weight", gate},
                                                  {"m.mlp.up_proj.weight", up},
                                                  {"m.mlp.down_proj.weight", down}});
  auto legacy = MakeMemoryCheckpoint(
      kTinyConfig, {{"m.mlp.gate_proj.weight", fused}, {"m.mlp.down_proj.weight", down}});
  for (const Checkpoint* checkpoint : {split.get(), legacy.get()}) {
    auto mlp = ReadGatedMlp(*checkpoint, "m.mlp", inter, hidden);
    ASSERT_TRUE(mlp.ok()) << mlp.status();
    EXPECT_EQ(mlp->gate.shape, (std::vector<int64_t>{inter, hidden}));
    EXPECT_EQ(mlp->gate.data, gate.data);
    EXPECT_EQ(mlp->up.shape, (std::vector<int64_t>{inter, hidden}));
    EXPECT_EQ(mlp->up.data, up.data);
    EXPECT_EQ(mlp->down.data, down.data);
  }
  // A gate of the split shape with no up_proj is neither form.
  auto broken = MakeMemoryCheckpoint(
      kTinyConfig, {{"m.mlp.gate_proj.weight", gate}, {"m.mlp.down_proj.weight", down}});
  auto mlp = ReadGatedMlp(*broken, "m.mlp", inter, hidden);
  EXPECT_EQ(mlp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mlp.status().message().find("m.mlp.up_proj.weight"), std::string::npos);
  // Wrong intermediate size for the split form names the tensor and both shapes.
  auto wrong = ReadGatedMlp(*split, "m.mlp", inter + 1, hidden);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("m.mlp.gate_proj.weight"), std::string::npos);
}

TEST(WeightReaderTest, TiedAndSeparateHeads) {
  HostTensor embedding = RandomTensor({5, 2}, 1), head = RandomTensor({5, 2}, 2);
  auto tied = MakeMemoryCheckpoint(kTinyConfig, {{"emb", embedding}});
  auto separate = MakeMemoryCheckpoint(kTinyConfig, {{"emb", embedding}, {"head", head}});
  EXPECT_EQ(ReadLmHead(*tied, "head", "emb", true, 5, 2)->data, embedding.data);
  EXPECT_EQ(ReadLmHead(*separate, "head", "emb", true, 5, 2)->data, head.data);
  EXPECT_EQ(ReadLmHead(*separate, "head", "emb", false, 5, 2)->data, head.data);
  auto untied = ReadLmHead(*tied, "head", "emb", false, 5, 2);
  EXPECT_EQ(untied.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(untied.status().message().find("head"), std::string::npos);
  EXPECT_NE(untied.status().message().find("emb"), std::string::npos);
  EXPECT_FALSE(ReadLmHead(*separate, "head", "emb", false, 4, 2).ok());
}

// The golden fixtures as fla and transformers wrote them: every tensor reads, and the
// main shapes agree with config.json.
TEST(CheckpointLoaderTest, ReadsGoldenFixtures) {
  for (const std::string model : {"hgrn2", "hgrn", "gla", "llama", "mamba"}) {
    SCOPED_TRACE(model);
    auto checkpoint = OpenCheckpoint(testing::SourcePath("tests/golden/" + model));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    const nlohmann::json& config = (*checkpoint)->config();
    const int64_t vocab = config["vocab_size"], hidden = config["hidden_size"],
                  layers = config["num_hidden_layers"];
    for (const std::string& name : (*checkpoint)->TensorNames()) {
      auto read = (*checkpoint)->ReadFloat(name, {});
      ASSERT_TRUE(read.ok()) << read.status();
    }
    const std::string embedding = model == "mamba"   ? "backbone.embeddings.weight"
                                  : model == "llama" ? "model.embed_tokens.weight"
                                                     : "model.embeddings.weight";
    EXPECT_TRUE((*checkpoint)->ReadFloat(embedding, {vocab, hidden}).ok());
    const bool tied = config.value("tie_word_embeddings", model == "mamba");
    EXPECT_TRUE(ReadLmHead(**checkpoint, "lm_head.weight", embedding, tied, vocab, hidden).ok());
    const std::string layer_prefix = model == "mamba" ? "backbone.layers." : "model.layers.";
    int64_t seen_layers = 0;
    while ((*checkpoint)
               ->Has(layer_prefix + std::to_string(seen_layers) +
                     (model == "mamba"   ? ".norm.weight"
                      : model == "llama" ? ".input_layernorm.weight"
                                         : ".attn_norm.weight"))) {
      ++seen_layers;
    }
    EXPECT_EQ(seen_layers, layers);
    if (model == "llama") {
      const int64_t heads = config["num_attention_heads"], kv = config["num_key_value_heads"],
                    head_dim = config["head_dim"], inter = config["intermediate_size"];
      for (int64_t l = 0; l < layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l);
        EXPECT_TRUE((*checkpoint)
                        ->ReadFloat(p + ".self_attn.q_proj.weight", {heads * head_dim, hidden})
                        .ok());
        EXPECT_TRUE(
            (*checkpoint)->ReadFloat(p + ".self_attn.k_proj.weight", {kv * head_dim, hidden}).ok());
        EXPECT_TRUE(ReadGatedMlp(**checkpoint, p + ".mlp", inter, hidden).ok());
      }
    }
    if (model == "hgrn2") {
      EXPECT_TRUE((*checkpoint)->ReadFloat("model.lower_bounds", {layers, hidden}).ok());
    }
    EXPECT_EQ((*checkpoint)->ContentHash(), (*checkpoint)->ContentHash());
  }
}

}  // namespace
}  // namespace hgeval
