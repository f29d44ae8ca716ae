// Programmatic dependent launch (Hopper): a kernel launched with it may start while the
// kernel before it in the stream still runs, once every block of that one has started
// (and called LetDependentsLaunch) or left. It must call WaitForPrerequisites before it
// reads or writes anything its predecessors touch; before that it may only read what no
// kernel writes (weights). Why: a batch-1 decode step is ~9 kernels a layer, each short,
// and a GEMV's weight loads can then start during the small kernel before it
// (docs/cuda.md, performance log entry 42).
//
// Rules that keep a chain of such kernels ordered as a plain stream would be:
// - every block of a kernel launched with LaunchMaybeProgrammatic calls
//   WaitForPrerequisites before its first access to shared buffers, and before it leaves
//   (so a kernel never completes before its predecessor: completion is transitive);
// - a kernel launched plainly (<<<>>>, cuBLAS) waits for the whole predecessor as always.
#ifndef HGEVAL_ENGINE_CUDA_PROGRAMMATIC_LAUNCH_CUH_
#define HGEVAL_ENGINE_CUDA_PROGRAMMATIC_LAUNCH_CUH_

#include <cuda_runtime.h>

#include <utility>

#include "engine/cuda/current_device.cuh"
#include "engine/cuda/env_switch.h"

namespace hgeval::cuda {

// Waits until the kernels this one depends on have completed and their writes are
// visible. A no-op where the kernel was launched plainly (or before sm_90).
__device__ __forceinline__ void WaitForPrerequisites() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the next kernel in the stream (if launched programmatically) start its blocks.
__device__ __forceinline__ void LetDependentsLaunch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
}

// The opening of a kernel that reads what the kernels before it wrote: its dependents may
// start, and it waits for its prerequisites (the rules above).
__device__ __forceinline__ void StartAfterPrerequisites() {
  LetDependentsLaunch();
  WaitForPrerequisites();
}

// True where the current device is Hopper or later (compute capability 9), unless
// HGEVAL_CUDA_PDL=0 (for measurement, read once). The device is asked at each launch, as
// the other per-device choices are (ChosenFlashKernel): a process may drive several GPUs.
inline bool ProgrammaticLaunchEnabled() {
  static const bool allowed = !EnvIs("HGEVAL_CUDA_PDL", "0");
  return allowed && CurrentDeviceAttribute(cudaDevAttrComputeCapabilityMajor).value_or(0) >= 9;
}

// Launches `kernel`, programmatically where enabled. The kernel must follow the rules above.
template <typename... Params, typename... Args>
cudaError_t LaunchMaybeProgrammatic(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                    cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attr;
  config.numAttrs = ProgrammaticLaunchEnabled() ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_PROGRAMMATIC_LAUNCH_CUH_
