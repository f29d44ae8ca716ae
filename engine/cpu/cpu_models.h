// The CPU backend's builders: one per family (fp32 maths), one file each (hgrn2.cc,
// hgrn1.cc, gla.cc, llama.cc, mamba.cc, tnl.cc), each reading its token mixers and handing
// them to the one skeleton (cpu_model.h; the CUDA backend's cuda_mixers.h mirrors it). A
// new family adds its builder here and its row in cpu_models.cc's table, keyed by its
// FamilySpec::name (engine/model/family_table.h).
#ifndef HGEVAL_ENGINE_CPU_CPU_MODELS_H_
#define HGEVAL_ENGINE_CPU_CPU_MODELS_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
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

// The builder of c.family (cpu_models.cc's table); INTERNAL when the family has none.
absl::StatusOr<std::unique_ptr<Model>> BuildCpuModel(const Checkpoint& ckpt, const ModelConfig& c,
                                                     int64_t max_context);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_CPU_MODELS_H_
