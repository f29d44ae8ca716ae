#include "engine/cuda/cuda_mixers.h"

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/model/family_table.h"

namespace hgeval::cuda {
namespace {

struct CudaMixerFactory {
  std::string_view family_name;  // FamilySpec::name
  MixerOrError (*make)(const ModelConfig& config, Act act);
};

constexpr CudaMixerFactory kCudaMixers[] = {
    {"hgrn2", MakeHgrn2Mixer}, {"hgrn", MakeHgrnMixer},   {"gla", MakeGlaMixer},
    {"llama", MakeLlamaMixer}, {"mamba", MakeMambaMixer}, {"tnl", MakeTnlMixer},
};

}  // namespace

MixerOrError MakeCudaTokenMixer(const ModelConfig& config, Act act) {
  const CudaMixerFactory* factory = FindBackendEntry<CudaMixerFactory>(kCudaMixers, config.family);
  if (factory == nullptr) {
    return absl::InternalError(absl::StrCat("no CUDA token mixer for model family ",
                                            std::string(ModelFamilyName(config.family))));
  }
  return factory->make(config, act);
}

}  // namespace hgeval::cuda
