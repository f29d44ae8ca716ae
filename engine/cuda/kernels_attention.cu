// LLaMA attention pieces: RoPE, KV-cache writes, the causal softmax of the GEMM-based
// prefill, and the KV-cache decode kernel.
#include "engine/cuda/kernel_util.cuh"

namespace hgeval::cuda {
namespace {

template <typename T>
__global__ void RopeKernel(T* qkv, int heads, int kv_heads, int head_dim,
                           const int64_t* positions, double theta) {
  const int r = blockIdx.x;
  const int half = head_dim / 2;
  const int pairs = (heads + kv_heads) * half;
  const double pos = static_cast<double>(positions[r]);
  T* row = qkv + static_cast<int64_t>(r) * (heads + 2 * kv_heads) * head_dim;
  for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
    const int hh = p / half, i = p % half;
    const double inv_freq = pow(theta, -2.0 * i / head_dim);
    double sn, cs;
    sincos(pos * inv_freq, &sn, &cs);
    const float c = static_cast<float>(cs), s = static_cast<float>(sn);
    T* x = row + hh * head_dim;
    const float x0 = ToF(x[i]), x1 = ToF(x[i + half]);
    x[i] = FromF<T>(x0 * c - x1 * s);
    x[i + half] = FromF<T>(x0 * s + x1 * c);
  }
}

template <typename T>
__global__ void KvWriteKernel(const T* qkv, int seq_len, int heads, int kv_heads, int head_dim,
                              void* const* cache_ptrs, const int64_t* caps,
                              const int64_t* positions, int layer) {
  const int r = blockIdx.x;
  const int s = r / seq_len;
  T* cache = static_cast<T*>(cache_ptrs[s]);
  if (cache == nullptr) return;
  const int64_t cap = caps[s];
  const int64_t pos = positions[r];
  const int width = kv_heads * head_dim;
  const T* row = qkv + static_cast<int64_t>(r) * (heads + 2 * kv_heads) * head_dim;
  T* kdst = cache + (static_cast<int64_t>(layer) * 2 * cap + pos) * width;
  T* vdst = cache + ((static_cast<int64_t>(layer) * 2 + 1) * cap + pos) * width;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    kdst[c] = row[heads * head_dim + c];
    vdst[c] = row[(heads + kv_heads) * head_dim + c];
  }
}

// Grid (tq, nh).
template <typename T>
__global__ void CausalSoftmaxKernel(const float* scores, int tq, int tk, int64_t q_pos0,
                                    T* probs) {
  __shared__ float scratch[32];
  const int i = blockIdx.x, h = blockIdx.y;
  const int64_t off = (static_cast<int64_t>(h) * tq + i) * tk;
  const float* row = scores + off;
  T* out = probs + off;
  const int64_t last = q_pos0 + i;  // keys 0..last are visible
  const int valid = static_cast<int>(last + 1 < tk ? last + 1 : tk);
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < valid; j += blockDim.x) mx = fmaxf(mx, row[j]);
  mx = BlockMax(mx, scratch);
  float s = 0.0f;
  for (int j = threadIdx.x; j < valid; j += blockDim.x) s += expf(row[j] - mx);
  const float inv = 1.0f / BlockSum(s, scratch);
  for (int j = threadIdx.x; j < tk; j += blockDim.x) {
    out[j] = FromF<T>(j < valid ? expf(row[j] - mx) * inv : 0.0f);
  }
}

constexpr int kAttnWarps = 8;
constexpr int kMaxHeadDim = 256;
constexpr int kDimPerLane = kMaxHeadDim / 32;

// Grid (rows, H), kAttnWarps warps. Warp w takes keys w, w + kAttnWarps, ...; lanes split
// the head dimension. Each warp keeps an online softmax; the warps merge at the end in a
// fixed order.
template <typename T>
__global__ void __launch_bounds__(kAttnWarps * 32) DecodeAttentionKernel(
    const T* qkv, int heads, int kv_heads, int head_dim, void* const* cache_ptrs,
    const int64_t* caps, const int64_t* positions, int layer, float scale, T* o) {
  __shared__ float sm[kAttnWarps], sl[kAttnWarps];
  __shared__ float sacc[kAttnWarps][kMaxHeadDim];
  const int r = blockIdx.x, h = blockIdx.y;
  const T* cache = static_cast<const T*>(cache_ptrs[r]);
  if (cache == nullptr) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t cap = caps[r];
  const int64_t nkeys = positions[r] + 1;
  const int hk = h / (heads / kv_heads);
  const int width = kv_heads * head_dim;
  const T* kbase = cache + static_cast<int64_t>(layer) * 2 * cap * width + hk * head_dim;
  const T* vbase = cache + (static_cast<int64_t>(layer) * 2 + 1) * cap * width + hk * head_dim;
  const T* qrow = qkv + static_cast<int64_t>(r) * (heads + 2 * kv_heads) * head_dim +
                  h * head_dim;
  float qv[kDimPerLane], acc[kDimPerLane];
#pragma unroll
  for (int u = 0; u < kDimPerLane; ++u) {
    const int d = lane + 32 * u;
    qv[u] = d < head_dim ? ToF(qrow[d]) * scale : 0.0f;
    acc[u] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int64_t j = warp; j < nkeys; j += kAttnWarps) {
    const T* kr = kbase + j * width;
    const T* vr = vbase + j * width;
    float dot = 0.0f;
    float vv[kDimPerLane];
#pragma unroll
    for (int u = 0; u < kDimPerLane; ++u) {
      const int d = lane + 32 * u;
      vv[u] = d < head_dim ? ToF(vr[d]) : 0.0f;
      if (d < head_dim) dot = fmaf(qv[u], ToF(kr[d]), dot);
    }
    dot = WarpSum(dot);
    const float new_m = fmaxf(m, dot);
    const float corr = __expf(m - new_m);
    const float p = __expf(dot - new_m);
    l = fmaf(l, corr, p);
#pragma unroll
    for (int u = 0; u < kDimPerLane; ++u) acc[u] = fmaf(acc[u], corr, p * vv[u]);
    m = new_m;
  }
  if (lane == 0) {
    sm[warp] = m;
    sl[warp] = l;
  }
#pragma unroll
  for (int u = 0; u < kDimPerLane; ++u) {
    const int d = lane + 32 * u;
    if (d < head_dim) sacc[warp][d] = acc[u];
  }
  __syncthreads();
  float mx = sm[0];
  for (int w = 1; w < kAttnWarps; ++w) mx = fmaxf(mx, sm[w]);
  float den = 0.0f;
  for (int w = 0; w < kAttnWarps; ++w) den += sl[w] * __expf(sm[w] - mx);
  T* orow = o + static_cast<int64_t>(r) * heads * head_dim + h * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float num = 0.0f;
    for (int w = 0; w < kAttnWarps; ++w) num += sacc[w][d] * __expf(sm[w] - mx);
    orow[d] = FromF<T>(num / den);
  }
}

}  // namespace

cudaError_t ApplyRope(void* qkv, Act act, int rows, int heads, int kv_heads, int head_dim,
                      const int64_t* positions, double theta, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  HG_DISPATCH_ACT(act, RopeKernel<T><<<rows, 256, 0, stream>>>(
                           static_cast<T*>(qkv), heads, kv_heads, head_dim, positions, theta));
  return cudaGetLastError();
}

cudaError_t KvWrite(const void* qkv, Act act, int num_seqs, int seq_len, int heads,
                    int kv_heads, int head_dim, void* const* cache_ptrs, const int64_t* caps,
                    const int64_t* positions, int layer, cudaStream_t stream) {
  const int rows = num_seqs * seq_len;
  if (rows == 0) return cudaSuccess;
  HG_DISPATCH_ACT(act, KvWriteKernel<T><<<rows, 256, 0, stream>>>(
                           static_cast<const T*>(qkv), seq_len, heads, kv_heads, head_dim,
                           cache_ptrs, caps, positions, layer));
  return cudaGetLastError();
}

cudaError_t CausalSoftmax(const float* scores, int nh, int tq, int tk, int64_t q_pos0,
                          void* probs, Act act, cudaStream_t stream) {
  if (nh == 0 || tq == 0) return cudaSuccess;
  dim3 grid(tq, nh);
  HG_DISPATCH_ACT(act, CausalSoftmaxKernel<T><<<grid, 256, 0, stream>>>(
                           scores, tq, tk, q_pos0, static_cast<T*>(probs)));
  return cudaGetLastError();
}

cudaError_t DecodeAttention(const void* qkv, Act act, int rows, int heads, int kv_heads,
                            int head_dim, void* const* cache_ptrs, const int64_t* caps,
                            const int64_t* positions, int layer, float scale, void* o,
                            cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (head_dim > kMaxHeadDim) return cudaErrorInvalidValue;
  dim3 grid(rows, heads);
  HG_DISPATCH_ACT(act, DecodeAttentionKernel<T><<<grid, kAttnWarps * 32, 0, stream>>>(
                           static_cast<const T*>(qkv), heads, kv_heads, head_dim, cache_ptrs,
                           caps, positions, layer, scale, static_cast<T*>(o)));
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
