// A model's architecture, parsed from a Hugging Face config.json (fla or transformers
// layout, including legacy key names). See specs/models.md in the project docs.
#ifndef HGEVAL_ENGINE_MODEL_CONFIG_H_
#define HGEVAL_ENGINE_MODEL_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace hgeval {

enum class ModelFamily { kHgrn2, kHgrn, kGla, kLlama, kMamba, kTnl };

std::string_view ModelFamilyName(ModelFamily family);

struct ModelConfig {
  ModelFamily family = ModelFamily::kLlama;
  std::string model_type;  // as written in config.json ("hgrn2", "transformer", ...)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;        // D
  int64_t num_layers = 0;         // L
  int64_t intermediate_size = 0;  // MLP width I (computed by fla's rule when null)
  double norm_eps = 1e-6;         // block norms (rms_norm_eps / layer_norm_epsilon)
  bool tie_word_embeddings = false;
  int32_t bos_token_id = -1;
  int32_t eos_token_id = -1;
  int64_t max_position_embeddings = 0;

  // HGRN2 / HGRN.
  int64_t expand_ratio = 0;  // HGRN2: head dim K (= V); HGRN: E = D * expand_ratio
  int64_t num_heads = 0;     // HGRN2: H = D / expand_ratio; GLA: H; LLaMA: attention heads
  bool use_lower_bound = true;
  bool use_short_conv = false;
  int64_t conv_size = 4;

  // GLA.
  double expand_k = 0.5;
  double expand_v = 1.0;
  int64_t num_kv_heads = 0;  // GLA and LLaMA; equals num_heads when absent
  bool use_output_gate = true;
  std::optional<double> clamp_min;
  std::string feature_map;  // empty: none

  // LLaMA (HF) and fla "transformer" (renamed on load).
  int64_t head_dim = 0;
  double rope_theta = 10000.0;
  bool attention_bias = false;
  bool fla_key_names = false;  // weights use fla's names (model.embeddings, attn., ...)

  // Mamba (HF mamba-1).
  int64_t state_size = 16;     // N
  int64_t time_step_rank = 0;  // R
  int64_t conv_kernel = 4;     // Kc
  int64_t mamba_inner = 0;     // E = expand * D
  bool use_bias = false;       // in_proj / out_proj bias
  bool use_conv_bias = true;
  bool residual_in_fp32 = true;

  // TNL (TransNormerLLM, model_type "transnormer"): num_heads, intermediate_size (glu_dim)
  // and use_bias above; LRPE per layer; embeddings scaled by sqrt(D) unless
  // no_scale_embedding.
  std::vector<bool> tnl_lrpe;
  bool tnl_scale_embedding = true;
};

// Parses and validates a config.json object. Errors name the offending field.
absl::StatusOr<ModelConfig> ParseModelConfig(const nlohmann::json& config);

// fla GatedMLP's default width: 256 * ceil(int(D * hidden_ratio * 2/3) / 256).
int64_t FlaIntermediateSize(int64_t hidden_size, double hidden_ratio);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_CONFIG_H_
