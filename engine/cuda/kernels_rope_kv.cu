// LLaMA's RoPE and KV-cache write in one pass over qkv (RopeKvWrite, kernels.h): the
// rotation angles once per row and frequency instead of once per head, the row read once.
// The same double angles and fp32 rotation as ApplyRope, so the same bits as ApplyRope
// followed by KvWrite (rope_kv_write_gpu_test).
#include <cstdint>

#include "engine/cuda/kernel_util.cuh"

namespace hgeval::cuda {
namespace {

// kVec elements of one half of a head per thread (16 bytes; 1: any head width).
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) RopeVec {
  T x[kVec];
};

// One block per row. Shared memory: cos then sin of the row's head_dim / 2 angles.
template <typename T, int kVec>
__global__ void RopeKvWriteKernel(T* qkv, int heads, int kv_heads, int head_dim,
                                  const int64_t* positions, double theta, const int32_t* row_seq,
                                  void* const* cache_ptrs, const int64_t* caps, int layer) {
  extern __shared__ float angles[];
  using Vec = RopeVec<T, kVec>;
  const int r = blockIdx.x;
  const int half = head_dim / 2;
  float* cos_a = angles;
  float* sin_a = angles + half;
  const int64_t pos_i = positions[r];
  const double pos = static_cast<double>(pos_i);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    // ApplyRope's expressions: the same doubles for every head.
    const double inv_freq = pow(theta, -2.0 * i / head_dim);
    double sn, cs;
    sincos(pos * inv_freq, &sn, &cs);
    cos_a[i] = static_cast<float>(cs);
    sin_a[i] = static_cast<float>(sn);
  }
  __syncthreads();
  T* row = qkv + static_cast<int64_t>(r) * (heads + 2 * kv_heads) * head_dim;
  const int width = kv_heads * head_dim;
  T* cache = static_cast<T*>(cache_ptrs[row_seq[r]]);
  T* kdst = nullptr;
  T* vdst = nullptr;
  if (cache != nullptr) {
    const int64_t cap = caps[row_seq[r]];
    kdst = cache + (static_cast<int64_t>(layer) * 2 * cap + pos_i) * width;
    vdst = cache + ((static_cast<int64_t>(layer) * 2 + 1) * cap + pos_i) * width;
  }
  // q heads rotate in place; k heads rotate into the cache (in place where a row has none:
  // a decode step's padding). Nothing reads qkv's k after this.
  const int groups = half / kVec;
  for (int g = threadIdx.x; g < (heads + kv_heads) * groups; g += blockDim.x) {
    const int hh = g / groups, i = (g - hh * groups) * kVec;
    const T* src = row + hh * head_dim;
    T* dst = hh >= heads && kdst != nullptr ? kdst + (hh - heads) * head_dim : row + hh * head_dim;
    const Vec a = *reinterpret_cast<const Vec*>(src + i);
    const Vec b = *reinterpret_cast<const Vec*>(src + i + half);
    Vec lo, hi;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const float c = cos_a[i + j], s = sin_a[i + j];
      const float x0 = ToF(a.x[j]), x1 = ToF(b.x[j]);
      // ApplyRope's PTX: mul, mul, sub (ptxas contracts as there), and fma(x0, s, x1 c)
      // pinned: left to the compiler, one instance fused x1 c instead (other fp32 bits).
      lo.x[j] = FromF<T>(x0 * c - x1 * s);
      hi.x[j] = FromF<T>(__fmaf_rn(x0, s, x1 * c));
    }
    *reinterpret_cast<Vec*>(dst + i) = lo;
    *reinterpret_cast<Vec*>(dst + i + half) = hi;
  }
  if (vdst == nullptr) return;
  const Vec* vsrc = reinterpret_cast<const Vec*>(row + (heads + kv_heads) * head_dim);
  for (int c = threadIdx.x; c < width / kVec; c += blockDim.x) {
    reinterpret_cast<Vec*>(vdst)[c] = vsrc[c];
  }
}

template <typename T>
cudaError_t LaunchRopeKvWrite(T* qkv, int rows, int heads, int kv_heads, int head_dim,
                              const int64_t* positions, double theta, const int32_t* row_seq,
                              void* const* cache_ptrs, const int64_t* caps, int layer,
                              cudaStream_t stream) {
  constexpr int kVec = 16 / sizeof(T);
  const size_t shared = static_cast<size_t>(head_dim) * sizeof(float);
  // 16-byte vectors where a half head holds whole ones (qkv and the caches are whole pool
  // blocks, and every row and head starts a multiple of the vector in).
  if ((head_dim / 2) % kVec == 0 && reinterpret_cast<uintptr_t>(qkv) % 16 == 0) {
    RopeKvWriteKernel<T, kVec><<<rows, 256, shared, stream>>>(
        qkv, heads, kv_heads, head_dim, positions, theta, row_seq, cache_ptrs, caps, layer);
  } else {
    RopeKvWriteKernel<T, 1><<<rows, 256, shared, stream>>>(
        qkv, heads, kv_heads, head_dim, positions, theta, row_seq, cache_ptrs, caps, layer);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t RopeKvWrite(void* qkv, Act act, int rows, int heads, int kv_heads, int head_dim,
                        const int64_t* positions, double theta, const int32_t* row_seq,
                        void* const* cache_ptrs, const int64_t* caps, int layer,
                        cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (head_dim % 2 != 0) return cudaErrorInvalidValue;  // configs refuse odd ones
  cudaError_t err = cudaSuccess;
  HG_DISPATCH_ACT(
      act, err = LaunchRopeKvWrite(static_cast<T*>(qkv), rows, heads, kv_heads, head_dim, positions,
                                   theta, row_seq, cache_ptrs, caps, layer, stream));
  return err;
}

}  // namespace hgeval::cuda
