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
absl::StatusOr<std::unique_ptr<Model>> BuildLlama(const Checkpoint& ckpt, const ModelConfig& c);
absl::StatusOr<std::unique_ptr<Model>> BuildMamba(const Checkpoint& ckpt, const ModelConfig& c);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_CPU_MODELS_H_
