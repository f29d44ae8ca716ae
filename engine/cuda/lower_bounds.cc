#include "engine/cuda/lower_bounds.h"

#include "engine/model/lower_bounds.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {

absl::StatusOr<std::vector<DeviceBuffer>> UploadLowerBounds(const Checkpoint& checkpoint,
                                                            const ModelConfig& config,
                                                            int64_t width, DeviceAllocator& alloc) {
  const int64_t layers = config.num_layers;
  std::vector<DeviceBuffer> device(layers);
  if (!config.use_lower_bound) return device;
  HG_ASSIGN_OR_RETURN(std::vector<std::vector<float>> bounds,
                      ReadLowerBounds(checkpoint, "model.lower_bounds", layers, width));
  alloc.AddParameters(layers * width);
  for (int64_t l = 1; l < layers; ++l) {
    HG_RETURN_IF_ERROR(alloc.UploadDerived(bounds[l], &device[l]));
  }
  return device;
}

}  // namespace hgeval::cuda
