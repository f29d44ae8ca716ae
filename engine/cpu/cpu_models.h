// CPU backend entry point: builds any supported family from a checkpoint (fp32 maths).
#ifndef HGEVAL_ENGINE_CPU_CPU_MODELS_H_
#define HGEVAL_ENGINE_CPU_CPU_MODELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/model.h"

namespace hgeval::cpu {

absl::StatusOr<std::unique_ptr<Model>> BuildHgrn2(const Checkpoint& ckpt, const ModelConfig& c);
absl::StatusOr<std::unique_ptr<Model>> BuildHgrn(const Checkpoint& ckpt, const ModelConfig& c);
absl::StatusOr<std::unique_ptr<Model>> BuildGla(const Checkpoint& ckpt, const ModelConfig& c);
// max_context > 0 accepts sequences up to that many positions (LoadOptions::max_context);
// 0 keeps c.max_position_embeddings.
absl::StatusOr<std::unique_ptr<Model>> BuildLlama(const Checkpoint& ckpt, const ModelConfig& c,
                                                  int64_t max_context = 0);
absl::StatusOr<std::unique_ptr<Model>> BuildMamba(const Checkpoint& ckpt, const ModelConfig& c);
absl::StatusOr<std::unique_ptr<Model>> BuildTnl(const Checkpoint& ckpt, const ModelConfig& c);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_CPU_MODELS_H_
