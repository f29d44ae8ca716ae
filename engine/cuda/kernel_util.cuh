// Device helpers shared by the kernels_*.cu files.
#ifndef HGEVAL_ENGINE_CUDA_KERNEL_UTIL_CUH_
#define HGEVAL_ENGINE_CUDA_KERNEL_UTIL_CUH_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "engine/cuda/kernels.h"

namespace hgeval::cuda {

using bf16 = __nv_bfloat16;

__device__ __forceinline__ float ToF(float x) { return x; }
__device__ __forceinline__ float ToF(bf16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T FromF(float x);
template <>
__device__ __forceinline__ float FromF<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 FromF<bf16>(float x) {
  return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float Sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// log(1 + exp(x)) without overflow.
__device__ __forceinline__ float Softplus(float x) {
  return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
__device__ __forceinline__ float LogSigmoid(float x) { return -Softplus(-x); }
__device__ __forceinline__ float Silu(float x) { return x / (1.0f + expf(-x)); }
// One output of a gated linear unit: SiLU(gate) * up (SwiGLU), or gate * up without the
// activation (TNL's GLU). Every kernel that computes the MLP's GLU takes it from here, so
// they give the same floats.
__device__ __forceinline__ float GluUnit(float gate, float up, bool silu) {
  return (silu ? Silu(gate) : gate) * up;
}

__device__ __forceinline__ float WarpSum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float WarpMax(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. Fixed order, so deterministic. `scratch` holds 32 floats.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = WarpSum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = lane < warps ? scratch[lane] : 0.0f;
  return WarpSum(t);
}
__device__ __forceinline__ float BlockMax(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = WarpMax(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float t = lane < warps ? scratch[lane] : -INFINITY;
  return WarpMax(t);
}

__host__ __device__ inline int CeilDiv(int64_t a, int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

}  // namespace hgeval::cuda

// Dispatches `body` with `T` bound to float or bf16 according to `act`.
#define HG_DISPATCH_ACT(act, ...)             \
  do {                                        \
    if ((act) == ::hgeval::cuda::Act::kF32) { \
      using T = float;                        \
      __VA_ARGS__;                            \
    } else {                                  \
      using T = ::hgeval::cuda::bf16;         \
      __VA_ARGS__;                            \
    }                                         \
  } while (0)

#endif  // HGEVAL_ENGINE_CUDA_KERNEL_UTIL_CUH_
