// HGRN and HGRN2's per-layer lower bounds on the device: the model's rule
// (engine/model/lower_bounds.h) computed once on the host, one fp32 row per layer.
#ifndef HGEVAL_ENGINE_CUDA_LOWER_BOUNDS_H_
#define HGEVAL_ENGINE_CUDA_LOWER_BOUNDS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/cuda/device.h"
#include "engine/cuda/device_allocator.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"

namespace hgeval::cuda {

// config.num_layers buffers of `width` floats, counted once as `model.lower_bounds`'
// parameters. Layer 0's buffer stays empty (no bound: the kernels take a null pointer),
// and so do all of them when config.use_lower_bound is false.
absl::StatusOr<std::vector<DeviceBuffer>> UploadLowerBounds(const Checkpoint& checkpoint,
                                                            const ModelConfig& config,
                                                            int64_t width, DeviceAllocator& alloc);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_LOWER_BOUNDS_H_
