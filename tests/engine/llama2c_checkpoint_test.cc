// OpenLlama2cCheckpoint: the real stories260K export and synthetic files (separate
// classifier, exact q/k row permutation, truncation).
#include "engine/loader/llama2c_checkpoint.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>

#include "engine/loader/checkpoint.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/config.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

std::string StoriesPath() { return testing::SourcePath("data/models/stories260K/stories260K.bin"); }

std::vector<float> ReadRawFloats(const std::string& path, int64_t float_offset, int64_t count) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(28 + 4 * float_offset);
  std::vector<float> out(count);
  in.read(reinterpret_cast<char*>(out.data()), count * 4);
  EXPECT_TRUE(in.good());
  return out;
}

TEST(Llama2cCheckpointTest, Stories260KHeaderAndConfig) {
  auto checkpoint = OpenLlama2cCheckpoint(StoriesPath());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const nlohmann::json& config = (*checkpoint)->config();
  EXPECT_EQ(config["model_type"], "llama");
  EXPECT_EQ(config["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(config["hidden_size"], 64);
  EXPECT_EQ(config["intermediate_size"], 172);
  EXPECT_EQ(config["num_hidden_layers"], 5);
  EXPECT_EQ(config["num_attention_heads"], 8);
  EXPECT_EQ(config["num_key_value_heads"], 4);
  EXPECT_EQ(config["head_dim"], 8);
  EXPECT_EQ(config["vocab_size"], 512);
  EXPECT_EQ(config["max_position_embeddings"], 512);
  EXPECT_EQ(config["rms_norm_eps"], 1e-5);
  EXPECT_EQ(config["rope_theta"], 10000.0);
  EXPECT_EQ(config["bos_token_id"], 1);
  EXPECT_EQ(config["eos_token_id"], 2);
  EXPECT_EQ(config["tie_word_embeddings"], true);
  // The synthesized config is one the model layer accepts as a LLaMA.
  auto parsed = ParseModelConfig(config);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->family, ModelFamily::kLlama);
  EXPECT_EQ(parsed->num_heads, 8);
  EXPECT_EQ(parsed->num_kv_heads, 4);
  EXPECT_EQ(parsed->head_dim, 8);
  EXPECT_EQ(parsed->intermediate_size, 172);
  EXPECT_EQ(parsed->norm_eps, 1e-5);
  EXPECT_EQ(parsed->rope_theta, 10000.0);
  EXPECT_TRUE(parsed->tie_word_embeddings);
  EXPECT_FALSE(parsed->fla_key_names);

  // 1 embedding + 9 per layer + final norm + head.
  EXPECT_EQ((*checkpoint)->TensorNames().size(), 1u + 9 * 5 + 1 + 1);
  const Checkpoint& c = **checkpoint;
  for (int l = 0; l < 5; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    EXPECT_TRUE(c.ReadFloat(p + ".input_layernorm.weight", {64}).ok());
    EXPECT_TRUE(c.ReadFloat(p + ".self_attn.q_proj.weight", {64, 64}).ok());
    EXPECT_TRUE(c.ReadFloat(p + ".self_attn.k_proj.weight", {32, 64}).ok());
    EXPECT_TRUE(c.ReadFloat(p + ".self_attn.v_proj.weight", {32, 64}).ok());
    EXPECT_TRUE(c.ReadFloat(p + ".self_attn.o_proj.weight", {64, 64}).ok());
    EXPECT_TRUE(c.ReadFloat(p + ".post_attention_layernorm.weight", {64}).ok());
    EXPECT_TRUE(ReadGatedMlp(c, p + ".mlp", 172, 64).ok());
  }
  EXPECT_TRUE(c.ReadFloat("model.norm.weight", {64}).ok());
  auto embedding = c.ReadFloat("model.embed_tokens.weight", {512, 64});
  auto head = c.ReadFloat("lm_head.weight", {512, 64});
  ASSERT_TRUE(embedding.ok() && head.ok());
  EXPECT_EQ(embedding->data, head->data);  // shared classifier
  EXPECT_EQ(embedding->data, ReadRawFloats(StoriesPath(), 0, 512 * 64));
  EXPECT_EQ(c.Info("model.norm.weight")->file, StoriesPath());
  EXPECT_EQ(c.ContentHash().size(), 32u);
}

TEST(Llama2cCheckpointTest, Stories260KQkRowsAreThePermutedFileRows) {
  auto checkpoint = OpenLlama2cCheckpoint(StoriesPath());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const int64_t V = 512, D = 64, L = 5, KV = 32, hs = 8;
  const int64_t wq_offset = V * D + L * D;
  const int64_t wk_offset = wq_offset + L * D * D;
  const int64_t wv_offset = wk_offset + L * KV * D;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.";
    auto q = (*checkpoint)->ReadFloat(p + "q_proj.weight", {D, D});
    auto k = (*checkpoint)->ReadFloat(p + "k_proj.weight", {KV, D});
    auto v = (*checkpoint)->ReadFloat(p + "v_proj.weight", {KV, D});
    ASSERT_TRUE(q.ok() && k.ok() && v.ok());
    const auto raw_q = ReadRawFloats(StoriesPath(), wq_offset + l * D * D, D * D);
    const auto raw_k = ReadRawFloats(StoriesPath(), wk_offset + l * KV * D, KV * D);
    EXPECT_NE(q->data, raw_q);  // really permuted
    EXPECT_EQ(HalfSplitToInterleavedRows(q->data, 8, hs, D), raw_q);
    EXPECT_EQ(HalfSplitToInterleavedRows(k->data, 4, hs, D), raw_k);
    EXPECT_EQ(v->data, ReadRawFloats(StoriesPath(), wv_offset + l * KV * D, KV * D));
  }
}

// Attention scores are what matters: llama2.c's RoPE on its q/k rows must equal HF's
// rotate_half RoPE on the permuted rows, for every query head against its kv head.
TEST(Llama2cCheckpointTest, PermutationMakesHfRopeEqualLlama2cRope) {
  auto checkpoint = OpenLlama2cCheckpoint(StoriesPath());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const int64_t D = 64, hs = 8, heads = 8, kv_heads = 4, L = 5, V = 512, KV = 32;
  const auto hf_q =
      (*checkpoint)->ReadFloat("model.layers.2.self_attn.q_proj.weight", {D, D}).value().data;
  const auto hf_k =
      (*checkpoint)->ReadFloat("model.layers.2.self_attn.k_proj.weight", {KV, D}).value().data;
  const auto raw_q = ReadRawFloats(StoriesPath(), V * D + L * D + 2 * D * D, D * D);
  const auto raw_k = ReadRawFloats(StoriesPath(), V * D + L * D + L * D * D + 2 * KV * D, KV * D);
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  std::vector<double> xq(D), xk(D);
  for (auto& v : xq) v = normal(rng);
  for (auto& v : xk) v = normal(rng);
  auto project = [&](const std::vector<float>& w, const std::vector<double>& x, int64_t rows) {
    std::vector<double> y(rows, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < D; ++c) y[r] += w[r * D + c] * x[c];
    return y;
  };
  // llama2.c run.c: pair (i, i+1) for even i, angle pos / 10000^(i/hs).
  auto rope_interleaved = [&](std::vector<double> v, int pos) {
    for (size_t h = 0; h < v.size() / hs; ++h)
      for (int64_t i = 0; i < hs; i += 2) {
        const double a = pos / std::pow(10000.0, double(i) / hs);
        double& x0 = v[h * hs + i];
        double& x1 = v[h * hs + i + 1];
        const double r0 = x0 * std::cos(a) - x1 * std::sin(a);
        const double r1 = x0 * std::sin(a) + x1 * std::cos(a);
        x0 = r0;
        x1 = r1;
      }
    return v;
  };
  // HF rotate_half: pair (i, i+hs/2), angle pos / 10000^(2i/hs).
  auto rope_half = [&](std::vector<double> v, int pos) {
    for (size_t h = 0; h < v.size() / hs; ++h)
      for (int64_t i = 0; i < hs / 2; ++i) {
        const double a = pos / std::pow(10000.0, 2.0 * i / hs);
        double& x0 = v[h * hs + i];
        double& x1 = v[h * hs + i + hs / 2];
        const double r0 = x0 * std::cos(a) - x1 * std::sin(a);
        const double r1 = x0 * std::sin(a) + x1 * std::cos(a);
        x0 = r0;
        x1 = r1;
      }
    return v;
  };
  for (int qpos : {0, 3, 17}) {
    for (int kpos : {0, 2, 11}) {
      const auto q1 = rope_interleaved(project(raw_q, xq, D), qpos);
      const auto k1 = rope_interleaved(project(raw_k, xk, KV), kpos);
      const auto q2 = rope_half(project(hf_q, xq, D), qpos);
      const auto k2 = rope_half(project(hf_k, xk, KV), kpos);
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t g = h / (heads / kv_heads);
        double s1 = 0, s2 = 0;
        for (int64_t d = 0; d < hs; ++d) {
          s1 += q1[h * hs + d] * k1[g * hs + d];
          s2 += q2[h * hs + d] * k2[g * hs + d];
        }
        EXPECT_NEAR(s1, s2, 1e-9 * (1 + std::abs(s1))) << "head " << h;
      }
    }
  }
}

// A synthetic llama2.c file whose every float is its own index (so positions are visible).
std::string WriteSyntheticLlama2c(const std::string& dir, int32_t vocab, int64_t drop_bytes) {
  const int32_t D = 8, H = 12, L = 2, heads = 2, kv_heads = 1, seq = 4;
  const int32_t header[7] = {D, H, L, heads, kv_heads, vocab, seq};
  Llama2cHeader parsed{D, H, L, heads, kv_heads, vocab, seq};
  const uint64_t size = Llama2cFileSize(parsed);
  std::vector<float> floats((size - 28) / 4);
  for (size_t i = 0; i < floats.size(); ++i) floats[i] = static_cast<float>(i);
  const std::string path = dir + "/model.bin";
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header), sizeof(header));
  out.write(reinterpret_cast<const char*>(floats.data()),
            static_cast<std::streamsize>(floats.size() * 4 - drop_bytes));
  return path;
}

TEST(Llama2cCheckpointTest, SeparateClassifierAndExactPermutation) {
  const std::string path = WriteSyntheticLlama2c(testing::MakeTempDir("l2c"), -16, 0);
  auto checkpoint = OpenLlama2cCheckpoint(path);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  const nlohmann::json& config = (*checkpoint)->config();
  EXPECT_EQ(config["vocab_size"], 16);
  EXPECT_EQ(config["tie_word_embeddings"], false);
  const int64_t V = 16, D = 8, L = 2, hs = 4, KV = 4;
  auto head = (*checkpoint)->ReadFloat("lm_head.weight", {V, D});
  ASSERT_TRUE(head.ok()) << head.status();
  // wcls is the last array in the file.
  const int64_t total = (Llama2cFileSize({8, 12, 2, 2, 1, -16, 4}) - 28) / 4;
  EXPECT_EQ(head->data.front(), static_cast<float>(total - V * D));
  EXPECT_EQ(head->data.back(), static_cast<float>(total - 1));
  // q_proj of layer 1: HF row h*hs + j*hs/2 + i holds llama2.c row h*hs + 2i + j.
  auto q = (*checkpoint)->ReadFloat("model.layers.1.self_attn.q_proj.weight", {D, D});
  ASSERT_TRUE(q.ok());
  const int64_t wq1 = V * D + L * D + D * D;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < hs / 2; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t c = 0; c < D; ++c) {
          const int64_t hf_row = h * hs + j * hs / 2 + i, l2c_row = h * hs + 2 * i + j;
          EXPECT_EQ(q->data[hf_row * D + c], static_cast<float>(wq1 + l2c_row * D + c));
        }
  // k_proj uses n_kv_heads (1 head of 4 rows): rows 0,2,1,3 of llama2.c's.
  auto k = (*checkpoint)->ReadFloat("model.layers.0.self_attn.k_proj.weight", {KV, D});
  ASSERT_TRUE(k.ok());
  const int64_t wk0 = V * D + L * D + L * D * D;
  const int64_t expected_rows[] = {0, 2, 1, 3};
  for (int64_t r = 0; r < KV; ++r) {
    EXPECT_EQ(k->data[r * D], static_cast<float>(wk0 + expected_rows[r] * D));
  }
}

TEST(Llama2cCheckpointTest, TruncatedFileIsDataLoss) {
  const std::string path = WriteSyntheticLlama2c(testing::MakeTempDir("l2ct"), 16, 4);
  auto checkpoint = OpenLlama2cCheckpoint(path);
  EXPECT_EQ(checkpoint.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(checkpoint.status().message().find(path), std::string::npos);
  EXPECT_NE(checkpoint.status().message().find("truncated"), std::string::npos);
}

TEST(Llama2cCheckpointTest, BadHeaderIsInvalidArgument) {
  const std::string dir = testing::MakeTempDir("l2cbad");
  const std::string path = dir + "/bad.bin";
  const int32_t header[7] = {8, 12, 2, 3 /* 8 % 3 != 0 */, 1, 16, 4};
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(header), 28);
  auto checkpoint = OpenLlama2cCheckpoint(path);
  EXPECT_EQ(checkpoint.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(checkpoint.status().message().find(path), std::string::npos);
  // A header claiming 2^31-sized everything must not overflow into a "valid" size.
  const int32_t huge[7] = {INT32_MAX - 1, INT32_MAX, INT32_MAX, 2, 1, INT32_MAX, INT32_MAX};
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(huge), 28);
  EXPECT_FALSE(OpenLlama2cCheckpoint(path).ok());
  EXPECT_EQ(OpenLlama2cCheckpoint(dir + "/absent.bin").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace hgeval
