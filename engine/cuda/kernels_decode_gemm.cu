// The decode step's skinny bf16 GEMM (kernels_decode_gemm.h, decode_gemm.h). A block owns
// kTiles * 16 rows of W and all (up to 32) rows of A; its kSplit warps split K into 32-wide
// chunks, warp w taking chunks w, w + kSplit, ..., each accumulating with mma.m16n8k16 (W
// rows as the mma's M, A rows as its N). A lane loads 16 contiguous bytes of a W row and of
// an A row at the same K offset and both feed the same mma k-slots, so the loads are
// vectorized and the k-slot of every K index is fixed. The warps' partial sums are then
// added in warp order through shared memory. The order of every output element's sum is
// thus a function of K alone: no M, no row position, no other row's value enters it.
#include <cuda_bf16.h>

#include <cstdint>

#include "engine/cuda/kernels_decode_gemm.h"
#include "engine/cuda/mma.cuh"

namespace hgeval::cuda {
namespace {

constexpr int kSplit = 16;  // warps per block, each a fixed share of K
constexpr int kThreads = kSplit * 32;
constexpr int kChunk = 32;  // K per warp step: 4 lanes x 8 bf16

__device__ __forceinline__ uint4 LoadStream(const __nv_bfloat16* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

template <int kTiles, typename OutT>
__global__ void __launch_bounds__(kThreads, 1)
    DecodeGemmKernel(int m, int n, int k, const __nv_bfloat16* __restrict__ a, int64_t lda,
                     const __nv_bfloat16* __restrict__ w, int64_t ldw, OutT* __restrict__ c,
                     int64_t ldc) {
  __shared__ float partial[kSplit * 4 * 4 * 32];  // [warp][n-tile][element][lane]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.x * kTiles * 16;
  const int ntiles = (m + 7) / 8;

  float acc[kTiles][4][4];
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  const uint4 zero = make_uint4(0, 0, 0, 0);
  const int chunks = (k + kChunk - 1) / kChunk;
  for (int ch = warp; ch < chunks; ch += kSplit) {
    const int kk = ch * kChunk + t * 8;
    const bool kin = kk < k;  // K % 8 == 0: a lane's 8 are all in or all out
    uint4 wlo[kTiles], whi[kTiles], x[4];
#pragma unroll
    for (int i = 0; i < kTiles; ++i) {
      const int r = row0 + i * 16 + g;
      wlo[i] = (kin && r < n) ? LoadStream(w + r * ldw + kk) : zero;
      whi[i] = (kin && r + 8 < n) ? LoadStream(w + (r + 8) * ldw + kk) : zero;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int r = j * 8 + g;
      x[j] = (kin && r < m) ? *reinterpret_cast<const uint4*>(a + r * lda + kk) : zero;
    }
#pragma unroll
    for (int i = 0; i < kTiles; ++i) {
      const uint32_t lo[4] = {wlo[i].x, whi[i].x, wlo[i].y, whi[i].y};
      const uint32_t hi[4] = {wlo[i].z, whi[i].z, wlo[i].w, whi[i].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (j < ntiles) {
          Mma(acc[i][j], lo, x[j].x, x[j].y);
          Mma(acc[i][j], hi, x[j].z, x[j].w);
        }
      }
    }
  }

  // One 16-row tile at a time through shared memory (32 KiB): item = (n-tile, element,
  // lane) of the mma's D layout, summed over the warps in warp order.
  constexpr int kItems = 4 * 4 * 32;
#pragma unroll
  for (int i = 0; i < kTiles; ++i) {
    if (i > 0) __syncthreads();
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) partial[warp * kItems + (j * 4 + e) * 32 + lane] = acc[i][j][e];
    __syncthreads();
    for (int item = threadIdx.x; item < kItems; item += kThreads) {
      const int l = item % 32, e = (item / 32) % 4, j = item / 128;
      const int row = row0 + i * 16 + l / 4 + (e >= 2 ? 8 : 0);
      const int col = j * 8 + (l % 4) * 2 + (e & 1);
      if (row >= n || col >= m) continue;
      float s = 0.0f;
#pragma unroll
      for (int sw = 0; sw < kSplit; ++sw) s += partial[sw * kItems + item];
      if constexpr (sizeof(OutT) == 4) {
        c[col * ldc + row] = s;
      } else {
        c[col * ldc + row] = __float2bfloat16(s);
      }
    }
  }
}

template <int kTiles, typename OutT>
cudaError_t Launch(cudaStream_t stream, int m, int n, int k, const __nv_bfloat16* a, int64_t lda,
                   const __nv_bfloat16* w, int64_t ldw, OutT* c, int64_t ldc) {
  auto* kernel = DecodeGemmKernel<kTiles, OutT>;
  const int blocks = (n + kTiles * 16 - 1) / (kTiles * 16);
  kernel<<<blocks, kThreads, 0, stream>>>(m, n, k, a, lda, w, ldw, c, ldc);
  return cudaGetLastError();
}

template <typename OutT>
cudaError_t Dispatch(cudaStream_t stream, int m, int n, int k, const __nv_bfloat16* a, int64_t lda,
                     const __nv_bfloat16* w, int64_t ldw, OutT* c, int64_t ldc) {
  // Rows of W per block: enough blocks to fill the GPU twice over, else fewer A re-reads.
  // The K split (and so every element's sum order) is the same for all three.
  if (n >= 4 * 16 * 264) return Launch<4>(stream, m, n, k, a, lda, w, ldw, c, ldc);
  if (n >= 2 * 16 * 264) return Launch<2>(stream, m, n, k, a, lda, w, ldw, c, ldc);
  return Launch<1>(stream, m, n, k, a, lda, w, ldw, c, ldc);
}

}  // namespace

cudaError_t LaunchDecodeGemm(cudaStream_t stream, int m, int n, int k, const void* a, int64_t lda,
                             const void* w, int64_t ldw, void* c, bool c_f32, int64_t ldc) {
  const auto* ap = static_cast<const __nv_bfloat16*>(a);
  const auto* wp = static_cast<const __nv_bfloat16*>(w);
  return c_f32 ? Dispatch(stream, m, n, k, ap, lda, wp, ldw, static_cast<float*>(c), ldc)
               : Dispatch(stream, m, n, k, ap, lda, wp, ldw, static_cast<__nv_bfloat16*>(c), ldc);
}

}  // namespace hgeval::cuda
