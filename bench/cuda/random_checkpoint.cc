#include "bench/cuda/random_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/model/family_table.h"
#include "engine/util/status_macros.h"

namespace hgeval::bench {

void FillRandom(std::vector<float>& data, float amplitude, uint64_t seed) {
  const unsigned nthreads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> threads;
  const size_t per = (data.size() + nthreads - 1) / nthreads;
  for (unsigned t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      uint64_t x = seed * 0x9E3779B97F4A7C15ull + t * 0xBF58476D1CE4E5B9ull + 1;
      const size_t end = std::min(data.size(), (t + 1) * per);
      for (size_t i = t * per; i < end; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const float u = static_cast<float>(x >> 40) * (1.0f / 16777216.0f);  // [0, 1)
        data[i] = (2.0f * u - 1.0f) * amplitude;
      }
    });
  }
  for (auto& th : threads) th.join();
}

namespace {

HostTensor Matrix(int64_t rows, int64_t cols, uint64_t seed) {
  HostTensor t;
  t.shape = {rows, cols};
  t.data.resize(rows * cols);
  FillRandom(t.data, std::sqrt(3.0f / cols), seed);
  return t;
}
HostTensor Ones(int64_t n) {
  HostTensor t;
  t.shape = {n};
  t.data.assign(n, 1.0f);
  return t;
}

nlohmann::json Hgrn2Config(int layers) {
  return {{"model_type", "hgrn2"},   {"hidden_size", 2048}, {"num_hidden_layers", layers},
          {"expand_ratio", 128},     {"vocab_size", 32000}, {"norm_eps", 1e-6},
          {"use_lower_bound", true}, {"hidden_ratio", 4}};
}

nlohmann::json TnlConfig(int layers) {
  // The 1.3B class of the rows beside it (TransNormerLLM's own 1B config.json was not
  // available here): D 2048, 16 heads, GLU 5632, TNL's vocabulary of 64,000, LRPE on
  // the first layer as in the released models.
  nlohmann::json lrpe = nlohmann::json::array();
  for (int l = 0; l < layers; ++l) lrpe.push_back(l == 0 ? 1 : 0);
  return {{"model_type", "transnormer"},
          {"decoder_embed_dim", 2048},
          {"hidden_dim", 2048},
          {"decoder_layers", layers},
          {"decoder_attention_heads", 16},
          {"glu_dim", 5632},
          {"vocab_size", 64000},
          {"linear_use_lrpe_list", lrpe},
          {"tie_word_embeddings", false}};
}

nlohmann::json GlaConfig(int layers) {
  // fla-hub/gla-1.3B-100B's shape: 4 heads, key dim 1024 (256 a head), value dim 2048 (512).
  return {{"model_type", "gla"},
          {"hidden_size", 2048},
          {"num_hidden_layers", layers},
          {"num_heads", 4},
          {"expand_k", 0.5},
          {"expand_v", 1.0},
          {"hidden_ratio", 4},
          {"vocab_size", 32000},
          {"norm_eps", 1e-6},
          {"use_gk", true},
          {"use_gv", false},
          {"use_output_gate", true},
          {"use_short_conv", false},
          {"tie_word_embeddings", false}};
}

nlohmann::json LlamaConfig(int layers) {
  return {
      {"model_type", "llama"},     {"hidden_size", 2048},       {"num_hidden_layers", layers},
      {"num_attention_heads", 16}, {"num_key_value_heads", 16}, {"intermediate_size", 5632},
      {"vocab_size", 32000},       {"rms_norm_eps", 1e-6},      {"max_position_embeddings", 65536}};
}

std::map<std::string, HostTensor> TnlWeights(const ModelConfig& c) {
  std::map<std::string, HostTensor> w;
  const int64_t D = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  uint64_t seed = 1;
  const int64_t H = c.num_heads, e = D / H;
  w["model.embed_tokens.weight"] = Matrix(V, D, seed++);
  w["lm_head.weight"] = Matrix(V, D, seed++);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    w[p + "token_mixer.qkvu_proj.weight"] = Matrix(4 * D, D, seed++);
    w[p + "token_mixer.out_proj.weight"] = Matrix(D, D, seed++);
    if (!c.tnl_lrpe.empty() && c.tnl_lrpe[l]) {
      HostTensor theta = Matrix(H, e, seed++);
      theta.shape = {H, 1, e};
      w[p + "token_mixer.lrpe.theta"] = std::move(theta);
    }
    w[p + "channel_mixer.l1.weight"] = Matrix(I, D, seed++);
    w[p + "channel_mixer.l2.weight"] = Matrix(I, D, seed++);
    w[p + "channel_mixer.l3.weight"] = Matrix(D, I, seed++);
  }
  return w;
}

std::map<std::string, HostTensor> GlaWeights(const ModelConfig& c) {
  std::map<std::string, HostTensor> w;
  const int64_t D = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  const int64_t key_dim = static_cast<int64_t>(D * c.expand_k);
  const int64_t value_dim = static_cast<int64_t>(D * c.expand_v);
  uint64_t seed = 1;
  w["model.embeddings.weight"] = Matrix(V, D, seed++);
  w["lm_head.weight"] = Matrix(V, D, seed++);
  w["model.norm.weight"] = Ones(D);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    w[p + "attn_norm.weight"] = Ones(D);
    w[p + "mlp_norm.weight"] = Ones(D);
    w[p + "mlp.gate_proj.weight"] = Matrix(I, D, seed++);
    w[p + "mlp.up_proj.weight"] = Matrix(I, D, seed++);
    w[p + "mlp.down_proj.weight"] = Matrix(D, I, seed++);
    w[p + "attn.q_proj.weight"] = Matrix(key_dim, D, seed++);
    w[p + "attn.k_proj.weight"] = Matrix(key_dim, D, seed++);
    w[p + "attn.v_proj.weight"] = Matrix(value_dim, D, seed++);
    w[p + "attn.g_proj.weight"] = Matrix(value_dim, D, seed++);
    w[p + "attn.gk_proj.0.weight"] = Matrix(16, D, seed++);
    w[p + "attn.gk_proj.1.weight"] = Matrix(key_dim, 16, seed++);
    HostTensor bias = Matrix(1, key_dim, seed++);
    bias.shape = {key_dim};
    w[p + "attn.gk_proj.1.bias"] = std::move(bias);
    w[p + "attn.g_norm_swish_gate.weight"] = Ones(value_dim / c.num_heads);
    w[p + "attn.o_proj.weight"] = Matrix(D, value_dim, seed++);
  }
  return w;
}

// HGRN2's and LLaMA's rows share the skeleton (fla's vs transformers' names).
std::map<std::string, HostTensor> SkeletonWeights(const ModelConfig& c, bool llama) {
  std::map<std::string, HostTensor> w;
  const int64_t D = c.hidden_size, V = c.vocab_size, I = c.intermediate_size;
  uint64_t seed = 1;
  w[llama ? "model.embed_tokens.weight" : "model.embeddings.weight"] = Matrix(V, D, seed++);
  w["lm_head.weight"] = Matrix(V, D, seed++);
  w["model.norm.weight"] = Ones(D);
  if (!llama) {
    HostTensor lb = Matrix(c.num_layers, D, seed++);
    w["model.lower_bounds"] = std::move(lb);
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = absl::StrCat("model.layers.", l, ".");
    w[p + (llama ? "input_layernorm.weight" : "attn_norm.weight")] = Ones(D);
    w[p + (llama ? "post_attention_layernorm.weight" : "mlp_norm.weight")] = Ones(D);
    w[p + "mlp.gate_proj.weight"] = Matrix(I, D, seed++);
    w[p + "mlp.up_proj.weight"] = Matrix(I, D, seed++);
    w[p + "mlp.down_proj.weight"] = Matrix(D, I, seed++);
    if (llama) {
      // [H hd, D] queries, [Hkv hd, D] keys and values (GQA where Hkv < H), [D, H hd] out;
      // all D x D in the 1.3B row. Seeds in the same order as before.
      const int64_t hd = c.head_dim > 0 ? c.head_dim : D / c.num_heads;
      const int64_t qd = c.num_heads * hd, kvd = c.num_kv_heads * hd;
      w[p + "self_attn.q_proj.weight"] = Matrix(qd, D, seed++);
      w[p + "self_attn.k_proj.weight"] = Matrix(kvd, D, seed++);
      w[p + "self_attn.v_proj.weight"] = Matrix(kvd, D, seed++);
      w[p + "self_attn.o_proj.weight"] = Matrix(D, qd, seed++);
    } else {
      for (const char* n : {"q_proj", "f_proj", "i_proj", "o_proj"}) {
        w[p + "attn." + n + ".weight"] = Matrix(D, D, seed++);
      }
      w[p + "attn.g_norm.weight"] = Ones(D);
    }
  }
  return w;
}

struct RandomModelRow {
  const char* name;  // --models spelling, also the family's FamilySpec::name
  const char* label;
  bool vocab_from_tokenizer;  // the row's vocabulary is not the sweeps' tokenizer's
  nlohmann::json (*config)(int layers);
  std::map<std::string, HostTensor> (*weights)(const ModelConfig& c);
};

const RandomModelRow kRows[] = {
    {"hgrn2", "HGRN2-1.3B shape (random)", false, Hgrn2Config,
     [](const ModelConfig& c) { return SkeletonWeights(c, /*llama=*/false); }},
    {"llama", "LLaMA-1.3B shape (random)", false, LlamaConfig,
     [](const ModelConfig& c) { return SkeletonWeights(c, /*llama=*/true); }},
    {"tnl", "TNL-1B class shape (random)", true, TnlConfig, TnlWeights},
    {"gla", "GLA-1.3B shape (random)", false, GlaConfig, GlaWeights},
};

const RandomModelRow* FindRow(const std::string& model) {
  for (const RandomModelRow& row : kRows) {
    if (model == row.name) return &row;
  }
  return nullptr;
}

// Unknown names fall back to LLaMA's row, as the benches check IsRandomModelFamily first.
const RandomModelRow& RowOf(const std::string& model) {
  const RandomModelRow* row = FindRow(model);
  return row != nullptr ? *row : kRows[1];
}

}  // namespace

bool IsRandomModelFamily(const std::string& family) { return FindRow(family) != nullptr; }

std::string RandomModelLabel(const std::string& family) { return RowOf(family).label; }

bool RandomModelHasKvCache(const std::string& family) {
  const FamilySpec* spec = FindFamilyByName(RowOf(family).name);
  return spec != nullptr && spec->has_kv_cache;
}

bool RandomModelTakesTokenizerVocab(const std::string& family) {
  return RowOf(family).vocab_from_tokenizer;
}

nlohmann::json RandomModelConfig(const std::string& family, int layers) {
  return RowOf(family).config(layers);
}

std::map<std::string, HostTensor> RandomWeights(const std::string& family, const ModelConfig& c) {
  return RowOf(family).weights(c);
}

absl::StatusOr<std::unique_ptr<Model>> BuildRandomModel(const std::string& family,
                                                        const nlohmann::json& config_json,
                                                        const LoadOptions& load) {
  HG_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(config_json));
  std::unique_ptr<Checkpoint> checkpoint =
      MakeMemoryCheckpoint(config_json, RandomWeights(family, config));
  return BuildModel(*checkpoint, load);
}

}  // namespace hgeval::bench
