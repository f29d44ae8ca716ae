#include "engine/model/lra_weights.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/cpu/fla_block.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

absl::StatusOr<std::vector<float>> ReadVector(const Checkpoint& checkpoint, const std::string& name,
                                              int64_t width) {
  HG_ASSIGN_OR_RETURN(HostTensor t, checkpoint.ReadFloat(name, {width}));
  return std::move(t.data);
}

absl::StatusOr<LraLinearWeights> ReadLinear(const Checkpoint& checkpoint, const std::string& prefix,
                                            int64_t out, int64_t in) {
  LraLinearWeights a;
  HG_ASSIGN_OR_RETURN(a.weight, checkpoint.ReadFloat(prefix + ".weight", {out, in}));
  if (checkpoint.Has(prefix + ".bias")) {
    HG_ASSIGN_OR_RETURN(a.bias, ReadVector(checkpoint, prefix + ".bias", out));
  }
  return a;
}

absl::StatusOr<LraNormWeights> ReadNorm(const Checkpoint& checkpoint, const std::string& prefix,
                                        int64_t width, bool batch, double eps) {
  LraNormWeights n;
  n.batch = batch;
  n.eps = static_cast<float>(eps);
  HG_ASSIGN_OR_RETURN(n.weight, ReadVector(checkpoint, prefix + ".weight", width));
  HG_ASSIGN_OR_RETURN(n.bias, ReadVector(checkpoint, prefix + ".bias", width));
  if (batch) {
    HG_ASSIGN_OR_RETURN(n.running_mean, ReadVector(checkpoint, prefix + ".running_mean", width));
    HG_ASSIGN_OR_RETURN(n.running_var, ReadVector(checkpoint, prefix + ".running_var", width));
    for (float v : n.running_var) {
      if (v < 0.0f) {
        return absl::InvalidArgumentError(
            absl::StrCat(checkpoint.source(), ": ", prefix, ".running_var has a negative value"));
      }
    }
  }
  return n;
}

absl::StatusOr<LraHgrn2MixerWeights> ReadHgrn2Mixer(const Checkpoint& checkpoint,
                                                    const std::string& prefix,
                                                    const LraClassifierConfig& config) {
  const int64_t d = config.hidden_size;
  LraHgrn2MixerWeights m;
  HG_ASSIGN_OR_RETURN(m.in_proj, ReadLinear(checkpoint, prefix + ".in_proj", 3 * d, d));
  HG_ASSIGN_OR_RETURN(m.out_proj, ReadLinear(checkpoint, prefix + ".out_proj", d, d));
  m.has_norm = config.mixer_norm;
  if (m.has_norm) {
    HG_ASSIGN_OR_RETURN(m.norm, ReadNorm(checkpoint, prefix + ".norm", d, false, 1e-5));
  }
  return m;
}

absl::StatusOr<LraHgrn1MixerWeights> ReadHgrn1Mixer(const Checkpoint& checkpoint,
                                                    const std::string& prefix,
                                                    const LraClassifierConfig& config) {
  const int64_t d = config.hidden_size;
  LraHgrn1MixerWeights m;
  HG_ASSIGN_OR_RETURN(m.input_proj, ReadLinear(checkpoint, prefix + ".input_proj", 2 * d, d));
  HG_ASSIGN_OR_RETURN(m.lambda_proj, ReadLinear(checkpoint, prefix + ".lambda_proj", d, d));
  HG_ASSIGN_OR_RETURN(m.gate, ReadLinear(checkpoint, prefix + ".gate", 2 * d, d));
  HG_ASSIGN_OR_RETURN(m.out_proj, ReadLinear(checkpoint, prefix + ".out_proj", d, 2 * d));
  HG_ASSIGN_OR_RETURN(m.norm, ReadNorm(checkpoint, prefix + ".norm", 2 * d, false, 1e-5));
  HG_ASSIGN_OR_RETURN(m.theta_forward, ReadVector(checkpoint, prefix + ".theta_forward", d));
  HG_ASSIGN_OR_RETURN(m.theta_reverse, ReadVector(checkpoint, prefix + ".theta_reverse", d));
  return m;
}

int64_t MixerParameters(const LraLayerWeights& layer, LraMixer mixer) {
  if (mixer == LraMixer::kHgrn2) {
    const LraHgrn2MixerWeights& m = layer.hgrn2;
    return m.in_proj.num_parameters() + m.out_proj.num_parameters() +
           (m.has_norm ? m.norm.num_parameters() : 0);
  }
  const LraHgrn1MixerWeights& m = layer.hgrn1;
  return m.input_proj.num_parameters() + m.lambda_proj.num_parameters() + m.gate.num_parameters() +
         m.out_proj.num_parameters() + m.norm.num_parameters() +
         static_cast<int64_t>(m.theta_forward.size() + m.theta_reverse.size());
}

}  // namespace

absl::StatusOr<LraClassifierWeights> ReadLraClassifierWeights(const Checkpoint& checkpoint,
                                                              const LraClassifierConfig& config) {
  LraClassifierWeights w;
  const int64_t d = config.hidden_size;
  const bool batch = config.norm == LraNorm::kBatch;
  int64_t params = 0;
  if (config.embedding_encoder) {
    HG_ASSIGN_OR_RETURN(w.embedding,
                        checkpoint.ReadFloat("encoder.weight", {config.vocab_size, d}));
    params += w.embedding.numel();
  } else {
    HG_ASSIGN_OR_RETURN(w.input_encoder,
                        ReadLinear(checkpoint, "encoder", d, config.input_channels));
    params += w.input_encoder.num_parameters();
  }
  std::vector<std::vector<float>> bounds;
  if (config.use_lower_bound) {
    HG_ASSIGN_OR_RETURN(bounds,
                        cpu::ReadLowerBounds(checkpoint, "lower_bounds", config.num_layers, d));
    params += config.num_layers * d;
  }
  if (checkpoint.Has(absl::StrCat("layers.", config.num_layers, ".mixer_norm.weight"))) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint.source(),
                     ": the checkpoint has more layers than num_layers = ", config.num_layers));
  }
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const std::string prefix = absl::StrCat("layers.", l);
    LraLayerWeights layer;
    if (!bounds.empty() && l > 0) layer.lower_bound = std::move(bounds[l]);
    HG_ASSIGN_OR_RETURN(layer.mixer_norm,
                        ReadNorm(checkpoint, prefix + ".mixer_norm", d, batch, config.norm_eps));
    if (config.mixer == LraMixer::kHgrn2) {
      HG_ASSIGN_OR_RETURN(layer.hgrn2, ReadHgrn2Mixer(checkpoint, prefix + ".mixer", config));
    } else {
      HG_ASSIGN_OR_RETURN(layer.hgrn1, ReadHgrn1Mixer(checkpoint, prefix + ".mixer", config));
    }
    HG_ASSIGN_OR_RETURN(layer.glu_norm,
                        ReadNorm(checkpoint, prefix + ".glu_norm", d, batch, config.norm_eps));
    HG_ASSIGN_OR_RETURN(layer.l1, ReadLinear(checkpoint, prefix + ".glu.l1", config.glu_size, d));
    HG_ASSIGN_OR_RETURN(layer.l2, ReadLinear(checkpoint, prefix + ".glu.l2", config.glu_size, d));
    HG_ASSIGN_OR_RETURN(layer.l3, ReadLinear(checkpoint, prefix + ".glu.l3", d, config.glu_size));
    params += layer.mixer_norm.num_parameters() + MixerParameters(layer, config.mixer) +
              layer.glu_norm.num_parameters() + layer.l1.num_parameters() +
              layer.l2.num_parameters() + layer.l3.num_parameters();
    w.layers.push_back(std::move(layer));
  }
  HG_ASSIGN_OR_RETURN(w.final_norm, ReadNorm(checkpoint, "final_norm", d, batch, config.norm_eps));
  params += w.final_norm.num_parameters();
  if (config.head == LraHead::kLinear) {
    HG_ASSIGN_OR_RETURN(w.head, ReadLinear(checkpoint, "head", config.num_classes, d));
    params += w.head.num_parameters();
  } else {
    HG_ASSIGN_OR_RETURN(w.head_fc1, ReadLinear(checkpoint, "head.fc1", d, 4 * d));
    HG_ASSIGN_OR_RETURN(w.head_fc2, ReadLinear(checkpoint, "head.fc2", config.num_classes, d));
    params += w.head_fc1.num_parameters() + w.head_fc2.num_parameters();
  }
  w.num_parameters = params;
  return w;
}

}  // namespace hgeval
