// Family-independent helpers for reading model weights from a Checkpoint: the forms that
// several families share (fused legacy MLP, tied embeddings).
#ifndef HGEVAL_ENGINE_LOADER_WEIGHT_READER_H_
#define HGEVAL_ENGINE_LOADER_WEIGHT_READER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"

namespace hgeval {

struct GatedMlpWeights {
  HostTensor gate;  // [I, D]
  HostTensor up;    // [I, D]
  HostTensor down;  // [D, I]
};

// Reads `<prefix>.gate_proj.weight`, `<prefix>.up_proj.weight`, `<prefix>.down_proj.weight`,
// or the legacy fla form (before fla b48ca31d) where gate_proj is [2I, D] holding gate rows
// [0, I) and up rows [I, 2I) and up_proj is absent.
absl::StatusOr<GatedMlpWeights> ReadGatedMlp(const Checkpoint& checkpoint,
                                             const std::string& prefix, int64_t intermediate,
                                             int64_t hidden);

// The output projection [V, D]: `head_name` if present; else, when `tied`, the embedding
// `embedding_name`; else a NotFound error naming both.
absl::StatusOr<HostTensor> ReadLmHead(const Checkpoint& checkpoint, const std::string& head_name,
                                      const std::string& embedding_name, bool tied, int64_t vocab,
                                      int64_t hidden);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_WEIGHT_READER_H_
