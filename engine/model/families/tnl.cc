// TNL (TransNormerLLM, model_type transnormer): its table entry (engine/model/family_table.h).
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/model/families/config_fields.h"
#include "engine/model/family_table.h"
#include "engine/util/status_macros.h"

namespace hgeval::families {
namespace {

absl::Status ParseConfig(const json& config, ModelConfig* out) {
  ModelConfig& c = *out;
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
    return absl::InvalidArgumentError(absl::StrCat("config.json: decoder_embed_dim ", c.hidden_size,
                                                   " is not divisible by decoder_attention_heads ",
                                                   c.num_heads));
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
        return absl::InvalidArgumentError("config.json: 'linear_use_lrpe_list' must hold integers");
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
  return absl::OkStatus();
}

// TransNormerLLM's names; its norms have no weights.
BlockTensorNames TensorNames(const Checkpoint&, const ModelConfig&) {
  return {
      "model.embed_tokens.weight", "", "lm_head.weight", "model.layers.", "", "", "token_mixer"};
}

// TNL's GLU: channel_mixer.l1 (gate), l2 (up), l3 (down).
absl::StatusOr<GatedMlpWeights> ReadMlp(const Checkpoint& checkpoint, const ModelConfig& c,
                                        const std::string& prefix) {
  const int64_t d = c.hidden_size, inter = c.intermediate_size;
  GatedMlpWeights mlp;
  HG_ASSIGN_OR_RETURN(mlp.gate,
                      checkpoint.ReadFloat(prefix + "channel_mixer.l1.weight", {inter, d}));
  HG_ASSIGN_OR_RETURN(mlp.up, checkpoint.ReadFloat(prefix + "channel_mixer.l2.weight", {inter, d}));
  HG_ASSIGN_OR_RETURN(mlp.down,
                      checkpoint.ReadFloat(prefix + "channel_mixer.l3.weight", {d, inter}));
  return mlp;
}

// Per layer: H heads of ek x e state (e = D / H; ek = 2e on LRPE layers, whose keys carry
// the cos and sin halves).
int64_t StateValuesPerSequence(const ModelConfig& c) {
  const int64_t h = c.num_heads, e = c.hidden_size / h;
  int64_t values = 0;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const bool lrpe = !c.tnl_lrpe.empty() && c.tnl_lrpe[l];
    values += h * (lrpe ? 2 * e : e) * e;
  }
  return values;
}

}  // namespace

const FamilySpec& Tnl() {
  static const FamilySpec spec{
      .family = ModelFamily::kTnl,
      .name = "tnl",
      .model_types = {"transnormer"},
      .architecture_prefixes = {{"Transnormer", "transnormer"}},
      .hidden_size_key = "decoder_embed_dim",  // TransNormerLLM's own names
      .num_layers_key = "decoder_layers",
      .parse_config = ParseConfig,
      .tensor_names = TensorNames,
      .read_mlp = ReadMlp,
      .state_values_per_sequence = StateValuesPerSequence,
  };
  return spec;
}

}  // namespace hgeval::families
