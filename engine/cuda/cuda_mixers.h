// The CUDA backend's family list (the CPU's cpu_models.h): a token mixer per family, one
// file each, named as on the CPU side (hgrn2.cc, hgrn1.cc, gla.cc, llama.cc, mamba.cc,
// tnl.cc). A new family adds its factory here and its row in cuda_mixers.cc's table, keyed
// by its FamilySpec::name (engine/model/family_table.h).
// Each refuses, with UNIMPLEMENTED, configurations its kernels do not cover.
#ifndef HGEVAL_ENGINE_CUDA_CUDA_MIXERS_H_
#define HGEVAL_ENGINE_CUDA_CUDA_MIXERS_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/token_mixer.h"
#include "engine/model/config.h"

namespace hgeval::cuda {

using MixerOrError = absl::StatusOr<std::unique_ptr<CudaTokenMixer>>;

MixerOrError MakeHgrn2Mixer(const ModelConfig& config, Act act);
MixerOrError MakeHgrnMixer(const ModelConfig& config, Act act);
MixerOrError MakeGlaMixer(const ModelConfig& config, Act act);
MixerOrError MakeLlamaMixer(const ModelConfig& config, Act act);
MixerOrError MakeMambaMixer(const ModelConfig& config, Act act);
MixerOrError MakeTnlMixer(const ModelConfig& config, Act act);

// The mixer of config.family (cuda_mixers.cc's table); INTERNAL when the family has none.
MixerOrError MakeCudaTokenMixer(const ModelConfig& config, Act act);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_CUDA_MIXERS_H_
