// What a launch asks of the GPU it is about to run on. Asked at each call, never cached
// from the first device: a process may drive several GPUs, and each choice (kernel form,
// grid size, launch attribute) must be the current device's.
#ifndef HGEVAL_ENGINE_CUDA_CURRENT_DEVICE_CUH_
#define HGEVAL_ENGINE_CUDA_CURRENT_DEVICE_CUH_

#include <cuda_runtime.h>

#include <optional>

namespace hgeval::cuda {

// One attribute of the current device; nullopt where CUDA cannot say.
inline std::optional<int> CurrentDeviceAttribute(cudaDeviceAttr attr) {
  int device = 0, value = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    return std::nullopt;
  }
  return value;
}

// The current device's compute capability as 10 * major + minor (90: Hopper); nullopt
// where CUDA cannot say.
inline std::optional<int> CurrentComputeCapability() {
  const std::optional<int> major = CurrentDeviceAttribute(cudaDevAttrComputeCapabilityMajor);
  const std::optional<int> minor = CurrentDeviceAttribute(cudaDevAttrComputeCapabilityMinor);
  if (!major || !minor) return std::nullopt;
  return 10 * *major + *minor;
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_CURRENT_DEVICE_CUH_
