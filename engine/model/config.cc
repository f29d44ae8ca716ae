#include "engine/model/config.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

using nlohmann::json;

// Reads an optional field; null or missing gives the default. Wrong types are errors.
template <typename T>
absl::Status Get(const json& config, const char* key, T* out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return absl::OkStatus();
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: '", key, "' must be a boolean"));
    }
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.json: '", key, "' must be an integer"));
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: '", key, "' must be a number"));
    }
  } else {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat("config.json: '", key, "' must be a string"));
    }
  }
  *out = it->get<T>();
  return absl::OkStatus();
}

absl::Status RequirePositive(const char* what, int64_t value) {
  if (value <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: '", what, "' must be positive, got ", value));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelFamily> FamilyOf(const json& config, std::string* model_type) {
  std::string type;
  HG_RETURN_IF_ERROR(Get(config, "model_type", &type));
  if (type.empty()) {
    auto arch = config.find("architectures");
    if (arch != config.end() && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
      const std::string name = (*arch)[0].get<std::string>();
      if (name.rfind("HGRN2", 0) == 0)
        type = "hgrn2";
      else if (name.rfind("HGRN", 0) == 0)
        type = "hgrn";
      else if (name.rfind("GLA", 0) == 0)
        type = "gla";
      else if (name.rfind("Llama", 0) == 0)
        type = "llama";
      else if (name.rfind("Transformer", 0) == 0)
        type = "transformer";
      else if (name.rfind("Mamba", 0) == 0)
        type = "mamba";
      else if (name.rfind("Transnormer", 0) == 0)
        type = "transnormer";
    }
  }
  *model_type = type;
  if (type == "hgrn2") return ModelFamily::kHgrn2;
  if (type == "hgrn") return ModelFamily::kHgrn;
  if (type == "gla") return ModelFamily::kGla;
  if (type == "llama" || type == "transformer") return ModelFamily::kLlama;
  if (type == "mamba") return ModelFamily::kMamba;
  if (type == "transnormer") return ModelFamily::kTnl;
  if (type == "lra_classifier") {
    return absl::InvalidArgumentError(
        "config.json: model_type 'lra_classifier' is a Long Range Arena classifier, not a "
        "language model; it is loaded by LoadLraClassifier and evaluated by the lra_* tasks");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: unsupported model_type '", type,
                   "' (supported: hgrn2, hgrn, gla, llama, transformer, mamba, transnormer)"));
}

// fla configs: norm_eps, or rms_norm_eps before fla 6d0aa569.
absl::Status ReadFlaCommon(const json& config, ModelConfig* c) {
  c->norm_eps = 1e-6;
  HG_RETURN_IF_ERROR(Get(config, "rms_norm_eps", &c->norm_eps));
  HG_RETURN_IF_ERROR(Get(config, "norm_eps", &c->norm_eps));
  c->bos_token_id = 1;
  c->eos_token_id = 2;
  double hidden_ratio = 4;
  HG_RETURN_IF_ERROR(Get(config, "hidden_ratio", &hidden_ratio));
  HG_RETURN_IF_ERROR(Get(config, "intermediate_size", &c->intermediate_size));
  if (c->intermediate_size == 0) {
    c->intermediate_size = FlaIntermediateSize(c->hidden_size, hidden_ratio);
  }
  std::string act = "swish";
  HG_RETURN_IF_ERROR(Get(config, "hidden_act", &act));
  if (act != "swish" && act != "silu") {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: hidden_act '", act, "' is not supported (swish only)"));
  }
  HG_RETURN_IF_ERROR(Get(config, "use_short_conv", &c->use_short_conv));
  HG_RETURN_IF_ERROR(Get(config, "conv_size", &c->conv_size));
  // false: the mixers' output norms have no weight (and the checkpoint no such tensor).
  bool affine = true;
  HG_RETURN_IF_ERROR(Get(config, "elementwise_affine", &affine));
  if (!affine) {
    return absl::UnimplementedError(
        "config.json: 'elementwise_affine' false (norms without weights) is not supported");
  }
  auto attn = config.find("attn");
  if (attn != config.end() && !attn->is_null()) {
    return absl::UnimplementedError("config.json: hybrid 'attn' layers are not supported");
  }
  auto attnres = config.find("attnres_block_size");
  if (attnres != config.end() && !attnres->is_null()) {
    return absl::UnimplementedError("config.json: 'attnres_block_size' is not supported");
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view ModelFamilyName(ModelFamily family) {
  switch (family) {
    case ModelFamily::kHgrn2:
      return "hgrn2";
    case ModelFamily::kHgrn:
      return "hgrn";
    case ModelFamily::kGla:
      return "gla";
    case ModelFamily::kLlama:
      return "llama";
    case ModelFamily::kMamba:
      return "mamba";
    case ModelFamily::kTnl:
      return "tnl";
  }
  return "unknown";
}

int64_t FlaIntermediateSize(int64_t hidden_size, double hidden_ratio) {
  const int64_t base = static_cast<int64_t>(hidden_size * hidden_ratio * 2.0 / 3.0);
  return 256 * ((base + 255) / 256);
}

absl::StatusOr<ModelConfig> ParseModelConfig(const json& config) {
  if (!config.is_object()) {
    return absl::InvalidArgumentError("config.json: top level must be an object");
  }
  ModelConfig c;
  auto family = FamilyOf(config, &c.model_type);
  if (!family.ok()) return family.status();
  c.family = *family;

  HG_RETURN_IF_ERROR(Get(config, "vocab_size", &c.vocab_size));
  HG_RETURN_IF_ERROR(Get(config, "hidden_size", &c.hidden_size));
  HG_RETURN_IF_ERROR(Get(config, "num_hidden_layers", &c.num_layers));
  if (c.family == ModelFamily::kTnl) {  // TransNormerLLM's own names
    HG_RETURN_IF_ERROR(Get(config, "decoder_embed_dim", &c.hidden_size));
    HG_RETURN_IF_ERROR(Get(config, "decoder_layers", &c.num_layers));
  }
  HG_RETURN_IF_ERROR(Get(config, "max_position_embeddings", &c.max_position_embeddings));
  if (c.max_position_embeddings < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: 'max_position_embeddings' must be >= 0, got ", c.max_position_embeddings));
  }
  HG_RETURN_IF_ERROR(RequirePositive("vocab_size", c.vocab_size));
  HG_RETURN_IF_ERROR(RequirePositive("hidden_size", c.hidden_size));
  HG_RETURN_IF_ERROR(RequirePositive("num_hidden_layers", c.num_layers));

  switch (c.family) {
    case ModelFamily::kHgrn2: {
      HG_RETURN_IF_ERROR(ReadFlaCommon(config, &c));
      // fla's HGRN2Config: expand_ratio defaults to 128 when the key is absent; null
      // means "from num_heads".
      c.expand_ratio = config.contains("expand_ratio") ? 0 : 128;
      HG_RETURN_IF_ERROR(Get(config, "expand_ratio", &c.expand_ratio));
      HG_RETURN_IF_ERROR(Get(config, "num_heads", &c.num_heads));
      // The layer uses H = D / expand_ratio whenever expand_ratio is set.
      if (c.expand_ratio > 0) {
        c.num_heads = c.hidden_size / c.expand_ratio;
      } else if (c.num_heads > 0) {
        c.expand_ratio = c.hidden_size / c.num_heads;
      } else {
        c.expand_ratio = 128;
        c.num_heads = c.hidden_size / 128;
      }
      if (c.num_heads <= 0 || c.num_heads * c.expand_ratio != c.hidden_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.json: hidden_size ", c.hidden_size, " is not divisible by 'expand_ratio' ",
            c.expand_ratio, " (or 'num_heads' ", c.num_heads, ")"));
      }
      HG_RETURN_IF_ERROR(Get(config, "use_lower_bound", &c.use_lower_bound));
      break;
    }
    case ModelFamily::kHgrn: {
      HG_RETURN_IF_ERROR(ReadFlaCommon(config, &c));
      c.expand_ratio = 1;
      HG_RETURN_IF_ERROR(Get(config, "expand_ratio", &c.expand_ratio));
      HG_RETURN_IF_ERROR(RequirePositive("expand_ratio", c.expand_ratio));
      HG_RETURN_IF_ERROR(Get(config, "use_lower_bound", &c.use_lower_bound));
      if (c.use_lower_bound && c.expand_ratio != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config.json: HGRN 'use_lower_bound' needs 'expand_ratio' 1, got ", c.expand_ratio));
      }
      break;
    }
    case ModelFamily::kGla: {
      HG_RETURN_IF_ERROR(ReadFlaCommon(config, &c));
      c.num_heads = 4;
      HG_RETURN_IF_ERROR(Get(config, "num_heads", &c.num_heads));
      HG_RETURN_IF_ERROR(Get(config, "num_kv_heads", &c.num_kv_heads));
      if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
      HG_RETURN_IF_ERROR(Get(config, "expand_k", &c.expand_k));
      HG_RETURN_IF_ERROR(Get(config, "expand_v", &c.expand_v));
      HG_RETURN_IF_ERROR(Get(config, "use_output_gate", &c.use_output_gate));
      HG_RETURN_IF_ERROR(Get(config, "feature_map", &c.feature_map));
      auto clamp = config.find("clamp_min");
      if (clamp != config.end() && !clamp->is_null()) {
        if (!clamp->is_number()) {
          return absl::InvalidArgumentError("config.json: 'clamp_min' must be a number");
        }
        c.clamp_min = clamp->get<double>();
      }
      HG_RETURN_IF_ERROR(RequirePositive("num_heads", c.num_heads));
      HG_RETURN_IF_ERROR(RequirePositive("num_kv_heads", c.num_kv_heads));
      if (c.num_heads % c.num_kv_heads != 0) {
        return absl::InvalidArgumentError(absl::StrCat("config.json: 'num_heads' ", c.num_heads,
                                                       " is not a multiple of 'num_kv_heads' ",
                                                       c.num_kv_heads));
      }
      for (auto [key, ratio] :
           {std::pair{"expand_k", c.expand_k}, std::pair{"expand_v", c.expand_v}}) {
        // Upstream truncates hidden_size * ratio; hgeval takes only exact widths.
        const double width = c.hidden_size * ratio;
        if (!(width > 0) || width != std::floor(width) ||
            static_cast<int64_t>(width) % c.num_heads != 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("config.json: hidden_size ", c.hidden_size, " x '", key, "' ", ratio,
                           " must be a whole width divisible into 'num_heads' ", c.num_heads));
        }
      }
      break;
    }
    case ModelFamily::kLlama: {
      if (c.model_type == "transformer") {
        c.fla_key_names = true;
        HG_RETURN_IF_ERROR(ReadFlaCommon(config, &c));
        c.num_heads = 32;
        HG_RETURN_IF_ERROR(Get(config, "num_heads", &c.num_heads));
        HG_RETURN_IF_ERROR(Get(config, "num_kv_heads", &c.num_kv_heads));
        bool qkv_bias = false, qk_norm = false;
        HG_RETURN_IF_ERROR(Get(config, "qkv_bias", &qkv_bias));
        HG_RETURN_IF_ERROR(Get(config, "attention_bias", &qkv_bias));
        HG_RETURN_IF_ERROR(Get(config, "qk_norm", &qk_norm));
        auto window = config.find("window_size");
        if (qkv_bias || qk_norm || (window != config.end() && !window->is_null())) {
          return absl::UnimplementedError(
              "config.json: fla transformer with qkv_bias, qk_norm or window_size is not "
              "supported");
        }
      } else {
        c.norm_eps = 1e-6;
        HG_RETURN_IF_ERROR(Get(config, "rms_norm_eps", &c.norm_eps));
        HG_RETURN_IF_ERROR(Get(config, "num_attention_heads", &c.num_heads));
        HG_RETURN_IF_ERROR(Get(config, "num_key_value_heads", &c.num_kv_heads));
        HG_RETURN_IF_ERROR(Get(config, "intermediate_size", &c.intermediate_size));
        HG_RETURN_IF_ERROR(Get(config, "attention_bias", &c.attention_bias));
        bool mlp_bias = false;
        HG_RETURN_IF_ERROR(Get(config, "mlp_bias", &mlp_bias));
        if (c.attention_bias || mlp_bias) {
          return absl::UnimplementedError(
              absl::StrCat("config.json: LLaMA '", c.attention_bias ? "attention_bias" : "mlp_bias",
                           "' true is not supported"));
        }
        std::string act = "silu";
        HG_RETURN_IF_ERROR(Get(config, "hidden_act", &act));
        if (act != "silu") {
          return absl::InvalidArgumentError(
              absl::StrCat("config.json: hidden_act '", act, "' is not supported (silu only)"));
        }
        c.bos_token_id = 1;
        c.eos_token_id = 2;
      }
      HG_RETURN_IF_ERROR(RequirePositive("num_attention_heads", c.num_heads));
      if (c.num_kv_heads == 0) c.num_kv_heads = c.num_heads;
      HG_RETURN_IF_ERROR(Get(config, "head_dim", &c.head_dim));
      if (c.head_dim == 0) c.head_dim = c.hidden_size / c.num_heads;
      HG_RETURN_IF_ERROR(RequirePositive("intermediate_size", c.intermediate_size));
      if (c.num_heads % c.num_kv_heads != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("config.json: 'num_attention_heads' ", c.num_heads,
                         " is not a multiple of 'num_key_value_heads' ", c.num_kv_heads));
      }
      if (c.head_dim <= 0 || c.head_dim % 2 != 0) {  // RoPE rotates pairs
        return absl::InvalidArgumentError(
            absl::StrCat("config.json: 'head_dim' must be positive and even, got ", c.head_dim));
      }
      HG_RETURN_IF_ERROR(Get(config, "rope_theta", &c.rope_theta));
      for (const char* key : {"rope_parameters", "rope_scaling"}) {
        auto rope = config.find(key);
        if (rope == config.end() || rope->is_null()) continue;
        if (!rope->is_object()) {
          return absl::InvalidArgumentError(
              absl::StrCat("config.json: '", key, "' must be an object"));
        }
        HG_RETURN_IF_ERROR(Get(*rope, "rope_theta", &c.rope_theta));
        std::string type = "default";
        HG_RETURN_IF_ERROR(Get(*rope, "rope_type", &type));
        HG_RETURN_IF_ERROR(Get(*rope, "type", &type));
        if (type != "default") {
          return absl::UnimplementedError(
              absl::StrCat("config.json: rope_type '", type, "' is not supported"));
        }
      }
      break;
    }
    case ModelFamily::kMamba: {
      c.norm_eps = 1e-5;
      HG_RETURN_IF_ERROR(Get(config, "layer_norm_epsilon", &c.norm_eps));
      c.tie_word_embeddings = true;  // transformers' default
      c.bos_token_id = 0;
      c.eos_token_id = 0;
      HG_RETURN_IF_ERROR(Get(config, "state_size", &c.state_size));
      int64_t expand = 2;
      HG_RETURN_IF_ERROR(Get(config, "expand", &expand));
      c.mamba_inner = expand * c.hidden_size;
      HG_RETURN_IF_ERROR(Get(config, "intermediate_size", &c.mamba_inner));
      c.intermediate_size = c.mamba_inner;
      auto rank = config.find("time_step_rank");
      if (rank == config.end() || rank->is_null() ||
          (rank->is_string() && rank->get<std::string>() == "auto")) {
        c.time_step_rank = (c.hidden_size + 15) / 16;
      } else {
        HG_RETURN_IF_ERROR(Get(config, "time_step_rank", &c.time_step_rank));
      }
      HG_RETURN_IF_ERROR(Get(config, "conv_kernel", &c.conv_kernel));
      HG_RETURN_IF_ERROR(Get(config, "use_bias", &c.use_bias));
      HG_RETURN_IF_ERROR(Get(config, "use_conv_bias", &c.use_conv_bias));
      HG_RETURN_IF_ERROR(Get(config, "residual_in_fp32", &c.residual_in_fp32));
      std::string act = "silu";
      HG_RETURN_IF_ERROR(Get(config, "hidden_act", &act));
      if (act != "silu") {
        return absl::InvalidArgumentError(
            absl::StrCat("config.json: hidden_act '", act, "' is not supported (silu only)"));
      }
      HG_RETURN_IF_ERROR(RequirePositive("state_size", c.state_size));
      HG_RETURN_IF_ERROR(RequirePositive("time_step_rank", c.time_step_rank));
      HG_RETURN_IF_ERROR(RequirePositive("conv_kernel", c.conv_kernel));
      break;
    }
    case ModelFamily::kTnl: {
      c.tie_word_embeddings = true;  // transformers' default when the key is absent
      c.bos_token_id = 1;
      c.eos_token_id = 2;
      HG_RETURN_IF_ERROR(Get(config, "decoder_attention_heads", &c.num_heads));
      HG_RETURN_IF_ERROR(Get(config, "glu_dim", &c.intermediate_size));
      HG_RETURN_IF_ERROR(Get(config, "bias", &c.use_bias));
      HG_RETURN_IF_ERROR(RequirePositive("decoder_attention_heads", c.num_heads));
      // Upstream's TransnormerDecoderLayer reads glu_dim -1 as decoder_embed_dim.
      if (c.intermediate_size == -1) c.intermediate_size = c.hidden_size;
      HG_RETURN_IF_ERROR(RequirePositive("glu_dim", c.intermediate_size));
      if (c.hidden_size % c.num_heads != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("config.json: decoder_embed_dim ", c.hidden_size,
                         " is not divisible by decoder_attention_heads ", c.num_heads));
      }
      if (c.num_layers < 2) {
        return absl::InvalidArgumentError(
            absl::StrCat("config.json: TNL needs decoder_layers >= 2, got ", c.num_layers,
                         " (its decay rule divides by L - 1)"));
      }
      int64_t hidden_dim = c.hidden_size;
      HG_RETURN_IF_ERROR(Get(config, "hidden_dim", &hidden_dim));
      if (hidden_dim != c.hidden_size) {
        return absl::UnimplementedError(
            absl::StrCat("config.json: hidden_dim ", hidden_dim, " != decoder_embed_dim ",
                         c.hidden_size, " is not supported (every released TNL has them equal)"));
      }
      std::string norm = "simplermsnorm", act = "silu";
      HG_RETURN_IF_ERROR(Get(config, "norm_type", &norm));
      HG_RETURN_IF_ERROR(Get(config, "linear_act_fun", &act));
      // Upstream's get_norm_fn gives nn.LayerNorm (with weights) for any other name.
      if (norm != "simplermsnorm") {
        return absl::UnimplementedError(
            absl::StrCat("config.json: norm_type '", norm, "' is not supported (simplermsnorm)"));
      }
      // Upstream's get_activation_fn maps "silu" and "swish" to F.silu.
      if (act != "silu" && act != "swish") {
        return absl::UnimplementedError(
            absl::StrCat("config.json: linear_act_fun '", act, "' is not supported (silu, swish)"));
      }
      bool no_scale = false;
      HG_RETURN_IF_ERROR(Get(config, "no_scale_embedding", &no_scale));
      c.tnl_scale_embedding = !no_scale;
      auto lrpe = config.find("linear_use_lrpe_list");
      if (lrpe != config.end() && !lrpe->is_null()) {
        if (!lrpe->is_array()) {
          return absl::InvalidArgumentError(
              "config.json: 'linear_use_lrpe_list' must be a list of 0/1 per layer");
        }
        for (const auto& v : *lrpe) {
          if (!v.is_number_integer() && !v.is_boolean()) {
            return absl::InvalidArgumentError(
                "config.json: 'linear_use_lrpe_list' must hold integers");
          }
          c.tnl_lrpe.push_back(v.is_boolean() ? v.get<bool>() : v.get<int64_t>() != 0);
        }
        // Upstream indexes the list by layer: fewer entries than layers fail there, more
        // are never read.
        if (!c.tnl_lrpe.empty() && static_cast<int64_t>(c.tnl_lrpe.size()) < c.num_layers) {
          return absl::InvalidArgumentError(absl::StrCat("config.json: 'linear_use_lrpe_list' has ",
                                                         c.tnl_lrpe.size(), " entries for ",
                                                         c.num_layers, " layers"));
        }
        if (!c.tnl_lrpe.empty()) c.tnl_lrpe.resize(c.num_layers);
      }
      if (c.tnl_lrpe.empty()) {
        // An empty list leaves upstream's layers to config.linear_use_lrpe: all or none.
        bool every_layer = false;
        auto one = config.find("linear_use_lrpe");
        if (one != config.end() && !one->is_null()) {
          if (!one->is_number_integer() && !one->is_boolean()) {
            return absl::InvalidArgumentError(
                "config.json: 'linear_use_lrpe' must be 0/1 or a boolean");
          }
          every_layer = one->is_boolean() ? one->get<bool>() : one->get<int64_t>() != 0;
        }
        if (every_layer) c.tnl_lrpe.assign(c.num_layers, true);
      }
      break;
    }
  }
  HG_RETURN_IF_ERROR(Get(config, "tie_word_embeddings", &c.tie_word_embeddings));
  for (auto [key, out] :
       {std::pair{"bos_token_id", &c.bos_token_id}, std::pair{"eos_token_id", &c.eos_token_id}}) {
    auto it = config.find(key);
    if (it != config.end() && it->is_array() && !it->empty() && (*it)[0].is_number_integer()) {
      *out = (*it)[0].get<int32_t>();  // HF allows a list of ids; the first is canonical
    } else {
      HG_RETURN_IF_ERROR(Get(config, key, out));
    }
  }
  if (!(c.norm_eps > 0)) {
    const char* key = c.family == ModelFamily::kMamba   ? "layer_norm_epsilon"
                      : c.family == ModelFamily::kLlama ? "rms_norm_eps' / 'norm_eps"
                                                        : "norm_eps' / 'rms_norm_eps";
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: '", key, "' must be positive, got ", c.norm_eps));
  }
  // RoPE's inverse frequencies are theta^(-2i/d): theta <= 0 or not finite gives NaN.
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: 'rope_theta' must be a positive number, got ", c.rope_theta));
  }
  return c;
}

}  // namespace hgeval
