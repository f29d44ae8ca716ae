// Hopper's warpgroup MMA (wgmma, the sm_90a target) and TMA, as the warp-specialised
// kernels use them (kernels_attention_wgmma.cu, kernels_swiglu_gemm.cu): shared-memory
// matrix descriptors for tiles written by TMA's 128-byte swizzle, the asynchronous
// region's fences, 2-D tensor loads, and the driver's tensor-map encoder. The callers
// compile their wgmma code only in an sm_90a pass; these helpers emit nothing unless
// called.
#ifndef HGEVAL_ENGINE_CUDA_WGMMA_CUH_
#define HGEVAL_ENGINE_CUDA_WGMMA_CUH_

#include <cuda.h>  // CUtensorMap and its enums (types only: the encoder is reached at run time)
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/mbarrier.cuh"

namespace hgeval::cuda {

// A wgmma shared-memory matrix descriptor with the 128-byte swizzle: start address,
// leading- and stride-dimension byte offsets (all in 16-byte units). A K-major tile of
// rows of 128 bytes (64 bf16) takes lbo 16 and sbo 1,024 (8 rows, the swizzle's period).
__device__ __forceinline__ uint64_t SmemDesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
         (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most kPending of this warpgroup's committed wgmma groups are in flight.
template <int kPending>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Keeps the compiler from moving accesses of wgmma operands (accumulators, register A
// fragments) across the asynchronous region.
template <int N>
__device__ __forceinline__ void FenceOperands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int N>
__device__ __forceinline__ void FenceOperands(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
#pragma unroll
    for (int x = 0; x < 4; ++x) asm volatile("" : "+r"(a[i][x])::"memory");
  }
}

// A warp-specialised block's opening: thread 0 initialises the stage barriers (`full`
// completes on the producer's arrival plus TMA's bytes, `empty` on the arrivals of all
// `consumers` threads), then the whole block syncs.
template <int kStages>
__device__ __forceinline__ void InitStageBarriers(uint64_t (&full)[kStages],
                                                  uint64_t (&empty)[kStages], int consumers) {
  if (threadIdx.x == 0) {
    for (int st = 0; st < kStages; ++st) {
      MbarInit(&full[st], 1);
      MbarInit(&empty[st], consumers);
    }
  }
  __syncthreads();
}

// A warpgroup's register budget moved to (kRegs a thread; all its threads execute it): down
// for the producer, up for the consumers.
template <int kRegs>
__device__ __forceinline__ void LowerRegisters() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void RaiseRegisters() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}

// TMA (cp.async.bulk.tensor): the 2-D box at (x, y) (x the inner, contiguous coordinate)
// into shared memory at `dst` (1,024-byte aligned under the 128-byte swizzle), completing
// on `bar`'s transaction count. Elements outside the tensor arrive as zeros.
__device__ __forceinline__ void TmaLoad2D(const CUtensorMap* map, uint32_t dst, uint64_t* bar,
                                          int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(y), "r"(SmemAddr(bar))
      : "memory");
}

// The driver's cuTensorMapEncodeTiled, reached through the runtime's entry point so that
// nothing new links; null where the driver does not offer it.
using TensorMapEncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                       const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                       const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                       CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
inline TensorMapEncodeFn TensorMapEncoder() {
  static const TensorMapEncodeFn encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                             cudaEnableDefault, &found);
#else  // toolkits before 12.5 have the unversioned form only
    const cudaError_t err =
        cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      return static_cast<TensorMapEncodeFn>(nullptr);
    }
    return reinterpret_cast<TensorMapEncodeFn>(fn);
  }();
  return encode;
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_WGMMA_CUH_
