#include "engine/loader/weight_reader.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/loader/tensor_table.h"
#include "engine/util/status_macros.h"

namespace hgeval {

absl::StatusOr<GatedMlpWeights> ReadGatedMlp(const Checkpoint& checkpoint,
                                             const std::string& prefix, int64_t intermediate,
                                             int64_t hidden) {
  const std::string gate_name = prefix + ".gate_proj.weight";
  const std::string up_name = prefix + ".up_proj.weight";
  const std::string down_name = prefix + ".down_proj.weight";
  GatedMlpWeights weights;
  if (checkpoint.Has(up_name) || !checkpoint.Has(gate_name)) {
    HG_ASSIGN_OR_RETURN(weights.gate, checkpoint.ReadFloat(gate_name, {intermediate, hidden}));
    HG_ASSIGN_OR_RETURN(weights.up, checkpoint.ReadFloat(up_name, {intermediate, hidden}));
  } else {
    // Legacy fla form (before b48ca31d): gate_proj [2I, D] = [gate; up], no up_proj.
    HG_ASSIGN_OR_RETURN(TensorInfo info, checkpoint.Info(gate_name));
    const std::vector<int64_t> fused_shape = {2 * intermediate, hidden};
    if (info.shape != fused_shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          info.file, ": tensor '", gate_name, "' has shape ", ShapeString(info.shape), " and '",
          up_name, "' is absent; expected the fused legacy form ", ShapeString(fused_shape),
          " (or a separate up_proj with gate_proj [", intermediate, ", ", hidden, "])"));
    }
    HG_ASSIGN_OR_RETURN(HostTensor fused, checkpoint.ReadFloat(gate_name, fused_shape));
    const auto half = fused.data.begin() + intermediate * hidden;
    weights.gate.shape = {intermediate, hidden};
    weights.gate.data.assign(fused.data.begin(), half);
    weights.up.shape = {intermediate, hidden};
    weights.up.data.assign(half, fused.data.end());
  }
  HG_ASSIGN_OR_RETURN(weights.down, checkpoint.ReadFloat(down_name, {hidden, intermediate}));
  return weights;
}

absl::StatusOr<HostTensor> ReadLmHead(const Checkpoint& checkpoint, const std::string& head_name,
                                      const std::string& embedding_name, bool tied, int64_t vocab,
                                      int64_t hidden) {
  if (checkpoint.Has(head_name)) return checkpoint.ReadFloat(head_name, {vocab, hidden});
  if (tied) return checkpoint.ReadFloat(embedding_name, {vocab, hidden});
  return absl::NotFoundError(absl::StrCat("checkpoint ", checkpoint.source(), ": tensor '",
                                          head_name,
                                          "' not found and tie_word_embeddings is false, so '",
                                          embedding_name, "' cannot stand in for it"));
}

}  // namespace hgeval
