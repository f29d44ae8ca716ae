// Row-wise kernels: embedding, norms, SwiGLU, gate maths, log-softmax-and-gather.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "engine/cuda/gate_maths.cuh"
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/programmatic_launch.cuh"

namespace hgeval::cuda {
namespace {

template <typename T>
__global__ void EmbedKernel(const T* table, const int32_t* ids, int dim, float* h) {
  const int r = blockIdx.x;
  const T* src = table + static_cast<int64_t>(ids[r]) * dim;
  float* dst = h + static_cast<int64_t>(r) * dim;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) dst[c] = ToF(src[c]);
}

// Values of a row per thread kept in registers between a norm's two passes (rows up to
// 8 × 256 = 2,048 wide: HGRN2-1.3B's): its loads all in flight at once, and the row read
// once. Wider rows re-read it. Either way thread t handles c = t, t + blockDim, ... in
// ascending order, so the sums of squares are the same floats.
constexpr int kNormRowRegs = 8;

// A decode step's rows (32 blocks) or a pack's tail: weights first. A pack: the plain order.
constexpr int kWeightsFirstMaxBlocks = 256;

// w[c] for this thread's c = threadIdx.x + u * blockDim.x of a row of n (0 past n): the
// weights-first forms' opening, before they wait for the kernels before.
__device__ __forceinline__ void LoadRowWeights(const float* w, int n, float (&wv)[kNormRowRegs]) {
#pragma unroll
  for (int u = 0; u < kNormRowRegs; ++u) {
    const int c = threadIdx.x + u * blockDim.x;
    wv[u] = c < n ? w[c] : 0.0f;
  }
}

// kWeightsFirst: the row-in-registers form loads its weights before the wait for the
// kernels before (no kernel writes them), so at a few rows, where the kernel is one chain
// of latencies, they arrive meanwhile instead of after the sum. It takes 40 registers, not
// 32, so many rows keep the plain order (the same floats in the same order either way).
template <typename T, bool kWeightsFirst>
__global__ void AddRmsNormKernel(float* h, const float* delta, const float* w, float eps, int dim,
                                 T* out) {
  if constexpr (!kWeightsFirst) StartAfterPrerequisites();
  __shared__ float scratch[32];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * dim;
  const int nt = blockDim.x;
  float ss = 0.0f;
  if (dim <= kNormRowRegs * nt) {
    float wv[kNormRowRegs];
    if constexpr (kWeightsFirst) {
      LoadRowWeights(w, dim, wv);
      StartAfterPrerequisites();
    }
    float hv[kNormRowRegs], dv[kNormRowRegs];
#pragma unroll
    for (int u = 0; u < kNormRowRegs; ++u) {
      const int c = threadIdx.x + u * nt;
      hv[u] = c < dim ? h[base + c] : 0.0f;
      dv[u] = delta != nullptr && c < dim ? delta[base + c] : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kNormRowRegs; ++u) {
      const int c = threadIdx.x + u * nt;
      if (c >= dim) break;
      if (delta) {
        hv[u] += dv[u];
        h[base + c] = hv[u];
      }
      ss += hv[u] * hv[u];
    }
    const float rstd = rsqrtf(BlockSum(ss, scratch) / dim + eps);
#pragma unroll
    for (int u = 0; u < kNormRowRegs; ++u) {
      const int c = threadIdx.x + u * nt;
      if (c < dim) out[base + c] = FromF<T>(hv[u] * rstd * (kWeightsFirst ? wv[u] : w[c]));
    }
    return;
  }
  if constexpr (kWeightsFirst) StartAfterPrerequisites();
  for (int c = threadIdx.x; c < dim; c += nt) {
    float v = h[base + c];
    if (delta) {
      v += delta[base + c];
      h[base + c] = v;
    }
    ss += v * v;
  }
  const float rstd = rsqrtf(BlockSum(ss, scratch) / dim + eps);
  for (int c = threadIdx.x; c < dim; c += nt) {
    out[base + c] = FromF<T>(h[base + c] * rstd * w[c]);
  }
}

// Grid (rows, groups). kWeightsFirst as AddRmsNormKernel's.
template <typename XT, typename GT, typename T, bool kWeightsFirst>
__global__ void RmsNormGatedKernel(const XT* x, int64_t x_ld, const GT* gate, int64_t gate_ld,
                                   bool gate_silu, const float* w, float eps, int group, T* out,
                                   int64_t out_ld, const int32_t* x_rows) {
  const int nt = blockDim.x;
  float wv[kNormRowRegs];  // w[c] for this thread's c of the group (every group shares w)
  if constexpr (kWeightsFirst) {
    if (group <= kNormRowRegs * nt) LoadRowWeights(w, group, wv);
  }
  StartAfterPrerequisites();
  __shared__ float scratch[32];
  const int r = blockIdx.x;
  const int64_t in_row = x_rows != nullptr ? x_rows[r] : r;  // x's and gate's row
  const int c0 = blockIdx.y * group;
  const XT* xr = x + in_row * x_ld + c0;
  auto gated = [&](int c, float y) {
    if (gate) {
      const float gv = ToF(gate[in_row * gate_ld + c0 + c]);
      y *= gate_silu ? Silu(gv) : gv;
    }
    out[r * out_ld + c0 + c] = FromF<T>(y);
  };
  float ss = 0.0f;
  if (group <= kNormRowRegs * nt) {
    float xv[kNormRowRegs];
#pragma unroll
    for (int u = 0; u < kNormRowRegs; ++u) {
      const int c = threadIdx.x + u * nt;
      xv[u] = c < group ? ToF(xr[c]) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kNormRowRegs; ++u) {
      if (threadIdx.x + u * nt >= group) break;
      ss += xv[u] * xv[u];
    }
    const float rstd = rsqrtf(BlockSum(ss, scratch) / group + eps);
#pragma unroll
    for (int u = 0; u < kNormRowRegs; ++u) {
      const int c = threadIdx.x + u * nt;
      if (c < group) gated(c, xv[u] * rstd * (kWeightsFirst ? wv[u] : w[c]));
    }
    return;
  }
  for (int c = threadIdx.x; c < group; c += nt) ss += ToF(xr[c]) * ToF(xr[c]);
  const float rstd = rsqrtf(BlockSum(ss, scratch) / group + eps);
  for (int c = threadIdx.x; c < group; c += nt) gated(c, ToF(xr[c]) * rstd * w[c]);
}

template <typename T>
__global__ void SwiGluKernel(const T* gu, int64_t total, int inter, bool silu, T* out,
                             int64_t out_ld) {
  StartAfterPrerequisites();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / inter, c = i % inter;
    const float g = ToF(gu[r * 2 * inter + c]);
    const float u = ToF(gu[r * 2 * inter + inter + c]);
    out[r * out_ld + c] = FromF<T>(GluUnit(g, u, silu));
  }
}

// SwiGluKernel's maths, 16 bytes of g, u and out per thread (8 bf16 or 4 fp32 values):
// needs inter and out_ld multiples of the vector and 16-byte aligned pointers. Per element
// the same operations, so the same floats. out may be gu itself (out_ld = 2 inter: each
// value written over its own g by the thread that read it), so neither is __restrict__.
template <typename T>
__global__ void SwiGluVecKernel(const T* gu, int rows, int inter, bool silu, T* out,
                                int64_t out_ld) {
  StartAfterPrerequisites();
  constexpr int kVec = 16 / sizeof(T);
  struct alignas(16) Vec {
    T x[kVec];
  };
  const int vecs_per_row = inter / kVec;
  const int64_t total = static_cast<int64_t>(rows) * vecs_per_row;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int r = static_cast<int>(i / vecs_per_row);
    const int v = static_cast<int>(i - static_cast<int64_t>(r) * vecs_per_row);
    const T* row = gu + static_cast<int64_t>(r) * 2 * inter;
    const Vec g = reinterpret_cast<const Vec*>(row)[v];
    const Vec u = reinterpret_cast<const Vec*>(row + inter)[v];
    Vec o;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      o.x[j] = FromF<T>(GluUnit(ToF(g.x[j]), ToF(u.x[j]), silu));
    }
    reinterpret_cast<Vec*>(out + static_cast<int64_t>(r) * out_ld)[v] = o;
  }
}

__global__ void AddBiasKernel(float* x, int64_t ld, const float* bias, int width) {
  float* row = x + blockIdx.x * ld;
  for (int c = threadIdx.x; c < width; c += blockDim.x) row[c] += bias[c];
}

template <typename T>
__global__ void GatherRowsKernel(const T* src, const int32_t* idx, int dim, T* dst) {
  const T* s = src + static_cast<int64_t>(idx[blockIdx.x]) * dim;
  T* d = dst + static_cast<int64_t>(blockIdx.x) * dim;
  for (int c = threadIdx.x; c < dim; c += blockDim.x) d[c] = s[c];
}

constexpr int kSoftmaxThreads = 512;
constexpr int kSoftmaxLoads = 16;  // float4 loads a thread has in flight in the max pass
// A row's first floats up to this many are kept in shared memory (192 KiB), so the row is
// read from DRAM once: the max pass fills the cache, the sum and normalise passes read it.
constexpr int kSoftmaxCachedFloats = 48 * 1024;

// Keeps (v, c) when v beats the thread's best so far; a thread sees its indices in
// ascending order, so its first maximum has its lowest index.
__device__ __forceinline__ void KeepMax(float v, int c, float& bv, int& bi) {
  if (v > bv) {
    bv = v;
    bi = c;
  }
}

// One block per row. The first `cached` floats (a multiple of 4, 0 when the row is not
// 16-byte aligned) are loaded as float4 into shared memory during the max pass; the sum
// of exponentials then runs in the per-thread order c = tid, tid + blockDim, ... over the
// same values, so lse is bitwise what one pass per read over global memory gave; the max
// and its lowest index do not depend on the order of the max pass.
__global__ void LogSoftmaxGatherKernel(float* logits, int vocab, int cached, const int32_t* targets,
                                       float* logprob, int32_t* argmax, bool normalize) {
  extern __shared__ float4 cache4[];
  const float* cache = reinterpret_cast<const float*>(cache4);
  __shared__ float scratch[32];
  __shared__ float best_val[kSoftmaxThreads / 32];
  __shared__ int best_idx[kSoftmaxThreads / 32];
  float* row = logits + static_cast<int64_t>(blockIdx.x) * vocab;
  const float4* row4 = reinterpret_cast<const float4*>(row);
  // Max with the lowest index on ties. A thread's float4 loads go out kSoftmaxLoads at a
  // time (a 32K-vocabulary row in one round), so the row costs one memory latency, not
  // one per four loads: one block an SM (its cache fills the shared memory) has nothing
  // else to hide it.
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  const int n4 = cached / 4;
  constexpr int kT = kSoftmaxThreads;
  for (int i0 = threadIdx.x; i0 < n4; i0 += kSoftmaxLoads * kT) {
    float4 a[kSoftmaxLoads];
#pragma unroll
    for (int u = 0; u < kSoftmaxLoads; ++u) {
      if (i0 + u * kT < n4) a[u] = row4[i0 + u * kT];
    }
#pragma unroll
    for (int u = 0; u < kSoftmaxLoads; ++u) {
      const int i = i0 + u * kT;
      if (i >= n4) break;
      cache4[i] = a[u];
      KeepMax(a[u].x, 4 * i, bv, bi);
      KeepMax(a[u].y, 4 * i + 1, bv, bi);
      KeepMax(a[u].z, 4 * i + 2, bv, bi);
      KeepMax(a[u].w, 4 * i + 3, bv, bi);
    }
  }
  for (int c = cached + threadIdx.x; c < vocab; c += kT) KeepMax(row[c], c, bv, bi);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
    if (ov > bv || (ov == bv && oi < bi)) {
      bv = ov;
      bi = oi;
    }
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    best_val[warp] = bv;
    best_idx[warp] = bi;
  }
  __syncthreads();  // also publishes the cache
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x >> 5); ++w) {
      if (best_val[w] > best_val[0] || (best_val[w] == best_val[0] && best_idx[w] < best_idx[0])) {
        best_val[0] = best_val[w];
        best_idx[0] = best_idx[w];
      }
    }
  }
  __syncthreads();
  const float mx = best_val[0];
  float s = 0.0f;
  for (int c = threadIdx.x; c < vocab; c += kT) s += expf((c < cached ? cache[c] : row[c]) - mx);
  const float lse = mx + logf(BlockSum(s, scratch));
  const int target = targets ? targets[blockIdx.x] : -1;
  if (threadIdx.x == 0) {
    const bool valid = target >= 0 && target < vocab;
    logprob[blockIdx.x] = valid ? (target < cached ? cache[target] : row[target]) - lse : 0.0f;
    argmax[blockIdx.x] = best_idx[0];
  }
  if (normalize) {
    __syncthreads();
    for (int c = threadIdx.x; c < vocab; c += kT) row[c] = (c < cached ? cache[c] : row[c]) - lse;
  }
}

// ---- gates ----

__global__ void Hgrn2GatesKernel(const float* qfi, int64_t total, int dim, const float* lower_bound,
                                 float* q, float* k, float* g, float* v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / dim, c = i % dim;
    const float* row = qfi + r * 3 * dim;
    const float qv = row[c], f = row[dim + c];
    q[i] = Silu(qv);
    Hgrn2KeyAndLogGate(f, lower_bound != nullptr, lower_bound ? lower_bound[c] : 0.0f, &k[i],
                       &g[i]);
    v[i] = row[2 * dim + c];
  }
}

// One thread per (row, head, channel up to max(dk, dv)).
__global__ void GlaGatesKernel(const float* proj, int64_t proj_ld, int64_t k_off, int64_t v_off,
                               const float* gk, int heads, int kv_heads, int dk, int dv,
                               float normalizer, bool has_clamp, float clamp_min, float* q,
                               float* k, float* g, float* v) {
  const int r = blockIdx.x, h = blockIdx.y;
  const int group = heads / kv_heads;
  const int hk = h / group;
  const float* row = proj + static_cast<int64_t>(r) * proj_ld;
  const int64_t kdim_kv = static_cast<int64_t>(kv_heads) * dk;
  for (int c = threadIdx.x; c < dk; c += blockDim.x) {
    const int64_t o = (static_cast<int64_t>(r) * heads + h) * dk + c;
    q[o] = row[static_cast<int64_t>(h) * dk + c];
    k[o] = row[k_off + static_cast<int64_t>(hk) * dk + c];
    float gv = LogSigmoid(gk[static_cast<int64_t>(r) * kdim_kv + hk * dk + c]) / normalizer;
    if (has_clamp) gv = fmaxf(gv, clamp_min);
    g[o] = gv;
  }
  for (int c = threadIdx.x; c < dv; c += blockDim.x) {
    v[(static_cast<int64_t>(r) * heads + h) * dv + c] =
        row[v_off + static_cast<int64_t>(hk) * dv + c];
  }
}

__global__ void HgrnGatesKernel(float* ifg, int64_t total, int width, const float* lower_bound) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width, c = i % width;
    float* row = ifg + r * 3 * width;
    const float f = row[width + c];
    float logf_gate, one_minus;
    if (lower_bound) {
      const float lb = lower_bound[c];
      logf_gate = logf(lb + (1.0f - lb) * Sigmoid(f));
      one_minus = (1.0f - lb) * Sigmoid(-f);
    } else {
      logf_gate = LogSigmoid(f);
      one_minus = Sigmoid(-f);
    }
    row[c] = Silu(row[c]) * one_minus;
    row[width + c] = logf_gate;
  }
}

int GridFor(int64_t total, int threads) {
  const int64_t blocks = (total + threads - 1) / threads;
  return static_cast<int>(blocks < 65535 * 8 ? (blocks > 0 ? blocks : 1) : 65535 * 8);
}

// RmsNormGatedKernel for a bf16 x (the bf16 packs' o) a row a block: thread t holds
// channels 8t .. 8t + 7 (one 16-byte load), so the row is read once with every load in
// flight. A group's sum of squares: each thread's 8 in order, its warp's by WarpSum, then
// the group's warps in order (groups of whole warps: group a multiple of 256). Fixed
// order for any batch, so a row alone gives the bits it gives among others.
constexpr int kNormVec = 8;
template <typename GT, typename T>
__global__ void __launch_bounds__(1024)
    RmsNormGatedBf16RowKernel(const bf16* __restrict__ x, int64_t x_ld, const GT* gate,
                              int64_t gate_ld, bool gate_silu, const float* __restrict__ w,
                              float eps, int group, T* __restrict__ out, int64_t out_ld,
                              const int32_t* __restrict__ x_rows) {
  struct alignas(16) Bf16x8 {
    bf16 v[kNormVec];
  };
  __shared__ float warp_sums[32];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int c = kNormVec * t;
  const int cg = c % group;
  // The weights first: no kernel writes them, so their loads overlap the wait for the
  // kernels before (and x's load), not follow the sum.
  float wv[kNormVec];
#pragma unroll
  for (int e = 0; e < kNormVec; ++e) wv[e] = w[cg + e];
  StartAfterPrerequisites();
  const int64_t r = blockIdx.x;
  const int64_t in_row = x_rows != nullptr ? x_rows[r] : r;  // x's and gate's row
  const Bf16x8 xv = *reinterpret_cast<const Bf16x8*>(x + in_row * x_ld + c);
  float xf[kNormVec];
  float ss = 0.0f;
#pragma unroll
  for (int e = 0; e < kNormVec; ++e) {
    xf[e] = ToF(xv.v[e]);
    ss += xf[e] * xf[e];
  }
  ss = WarpSum(ss);
  if (lane == 0) warp_sums[warp] = ss;
  __syncthreads();
  const int group_warps = group / (32 * kNormVec);
  const int first = warp - warp % group_warps;
  float total = 0.0f;
  for (int i = 0; i < group_warps; ++i) total += warp_sums[first + i];
  const float rstd = rsqrtf(total / group + eps);
  T y[kNormVec];
#pragma unroll
  for (int e = 0; e < kNormVec; ++e) {
    float v = xf[e] * rstd * wv[e];
    if (gate) {
      const float gv = ToF(gate[in_row * gate_ld + c + e]);
      v *= gate_silu ? Silu(gv) : gv;
    }
    y[e] = FromF<T>(v);
  }
  constexpr int kChunks = kNormVec * sizeof(T) / 16;
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    reinterpret_cast<uint4*>(out + r * out_ld + c)[i] = reinterpret_cast<const uint4*>(y)[i];
  }
}

// Whether RmsNormGatedBf16RowKernel takes a norm: whole warps a group, at most 1024
// threads a row, 16-byte aligned rows of x and out.
bool TakesBf16RowNorm(const void* x, int64_t x_ld, int width, int group, const void* out,
                      int64_t out_ld, Act out_act) {
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const int out_vec = 16 / static_cast<int>(ActSize(out_act));
  return group % (32 * kNormVec) == 0 && width % group == 0 && width / kNormVec <= 1024 &&
         x_ld % kNormVec == 0 && out_ld % out_vec == 0 && aligned(x) && aligned(out);
}

}  // namespace

cudaError_t EmbedRows(const void* table, Act table_act, const int32_t* ids, int rows, int dim,
                      float* h, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  HG_DISPATCH_ACT(table_act, EmbedKernel<T>
                  <<<rows, 256, 0, stream>>>(static_cast<const T*>(table), ids, dim, h));
  return cudaGetLastError();
}

cudaError_t AddRmsNorm(float* h, const float* delta, const float* w, float eps, int rows, int dim,
                       void* out, Act out_act, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  cudaError_t err = cudaSuccess;
  auto launch = [&](auto weights_first) {
    HG_DISPATCH_ACT(out_act, err = LaunchMaybeProgrammatic(
                                 AddRmsNormKernel<T, decltype(weights_first)::value>, rows, 256, 0,
                                 stream, h, delta, w, eps, dim, static_cast<T*>(out)));
  };
  rows <= kWeightsFirstMaxBlocks ? launch(std::true_type{}) : launch(std::false_type{});
  return err;
}

cudaError_t RmsNormGated(const void* x, int64_t x_ld, const void* gate, int64_t gate_ld,
                         const float* w, float eps, int rows, int width, int group, void* out,
                         Act out_act, int64_t out_ld, cudaStream_t stream, bool gate_silu,
                         Act gate_act, Act x_act, const int32_t* x_rows) {
  if (rows == 0) return cudaSuccess;
  if (x_act == Act::kBF16 && TakesBf16RowNorm(x, x_ld, width, group, out, out_ld, out_act)) {
    auto launch_rows = [&](const auto* g) {
      using G = std::remove_cv_t<std::remove_pointer_t<decltype(g)>>;
      cudaError_t err = cudaSuccess;
      HG_DISPATCH_ACT(out_act, err = LaunchMaybeProgrammatic(
                                   RmsNormGatedBf16RowKernel<G, T>, rows, width / kNormVec, 0,
                                   stream, static_cast<const bf16*>(x), x_ld, g, gate_ld, gate_silu,
                                   w, eps, group, static_cast<T*>(out), out_ld, x_rows));
      return err;
    };
    return gate_act == Act::kBF16 ? launch_rows(static_cast<const bf16*>(gate))
                                  : launch_rows(static_cast<const float*>(gate));
  }
  dim3 grid(rows, width / group);
  auto launch = [&](const auto* xs, const auto* g) {
    using X = std::remove_cv_t<std::remove_pointer_t<decltype(xs)>>;
    using G = std::remove_cv_t<std::remove_pointer_t<decltype(g)>>;
    cudaError_t err = cudaSuccess;
    auto launch_order = [&](auto weights_first) {
      HG_DISPATCH_ACT(out_act, err = LaunchMaybeProgrammatic(
                                   RmsNormGatedKernel<X, G, T, decltype(weights_first)::value>,
                                   grid, 256, 0, stream, xs, x_ld, g, gate_ld, gate_silu, w, eps,
                                   group, static_cast<T*>(out), out_ld, x_rows));
    };
    static_cast<int64_t>(grid.x) * grid.y <= kWeightsFirstMaxBlocks
        ? launch_order(std::true_type{})
        : launch_order(std::false_type{});
    return err;
  };
  auto with_x = [&](const auto* g) {
    return x_act == Act::kBF16 ? launch(static_cast<const bf16*>(x), g)
                               : launch(static_cast<const float*>(x), g);
  };
  return gate_act == Act::kBF16 ? with_x(static_cast<const bf16*>(gate))
                                : with_x(static_cast<const float*>(gate));
}

cudaError_t SwiGlu(const void* gu, int rows, int inter, void* out, Act act, cudaStream_t stream,
                   bool silu, int64_t out_ld) {
  const int64_t total = static_cast<int64_t>(rows) * inter;
  if (total == 0) return cudaSuccess;
  if (out_ld == 0) out_ld = inter;
  const int vec = act == Act::kF32 ? 4 : 8;
  const bool aligned =
      (reinterpret_cast<uintptr_t>(gu) | reinterpret_cast<uintptr_t>(out)) % 16 == 0;
  cudaError_t err = cudaSuccess;
  if (aligned && inter % vec == 0 && out_ld % vec == 0) {
    HG_DISPATCH_ACT(
        act, err = LaunchMaybeProgrammatic(SwiGluVecKernel<T>, GridFor(total / vec, 256), 256, 0,
                                           stream, static_cast<const T*>(gu), rows, inter, silu,
                                           static_cast<T*>(out), out_ld));
    return err;
  }
  HG_DISPATCH_ACT(act, err = LaunchMaybeProgrammatic(SwiGluKernel<T>, GridFor(total, 256), 256, 0,
                                                     stream, static_cast<const T*>(gu), total,
                                                     inter, silu, static_cast<T*>(out), out_ld));
  return err;
}

cudaError_t AddBias(float* x, int64_t ld, const float* bias, int rows, int width,
                    cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  AddBiasKernel<<<rows, 256, 0, stream>>>(x, ld, bias, width);
  return cudaGetLastError();
}

cudaError_t GatherRows(const void* src, const int32_t* idx, int n, int dim, void* dst, Act act,
                       cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  HG_DISPATCH_ACT(act, GatherRowsKernel<T><<<n, 256, 0, stream>>>(static_cast<const T*>(src), idx,
                                                                  dim, static_cast<T*>(dst)));
  return cudaGetLastError();
}

cudaError_t LogSoftmaxGather(float* logits, int rows, int vocab, const int32_t* targets,
                             float* logprob, int32_t* argmax, bool normalize, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  // Rows are 16-byte aligned when the vocabulary is a multiple of 4 floats (cudaMalloc
  // aligns the buffer); otherwise nothing is cached.
  const bool aligned = vocab % 4 == 0 && reinterpret_cast<uintptr_t>(logits) % 16 == 0;
  const int cached = aligned ? std::min(vocab, kSoftmaxCachedFloats) : 0;
  const size_t smem = static_cast<size_t>(cached) * sizeof(float);
  if (smem > 48 * 1024) {
    // A function attribute, not stream work: set outside graph capture (the first, eager
    // decode step runs before the capture).
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(stream, &capturing);
    if (capturing == cudaStreamCaptureStatusNone) {
      const cudaError_t err =
          cudaFuncSetAttribute(LogSoftmaxGatherKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(kSoftmaxCachedFloats * sizeof(float)));
      if (err != cudaSuccess) return err;
    }
  }
  LogSoftmaxGatherKernel<<<rows, kSoftmaxThreads, smem, stream>>>(logits, vocab, cached, targets,
                                                                  logprob, argmax, normalize);
  return cudaGetLastError();
}

cudaError_t Hgrn2Gates(const float* qfi, int rows, int dim, const float* lower_bound, float* q,
                       float* k, float* g, float* v, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(rows) * dim;
  if (total == 0) return cudaSuccess;
  Hgrn2GatesKernel<<<GridFor(total, 256), 256, 0, stream>>>(qfi, total, dim, lower_bound, q, k, g,
                                                            v);
  return cudaGetLastError();
}

// One thread per (row, head, channel c < e).
__global__ void TnlGatesKernel(const float* proj, int64_t total, int heads, int e, int dk,
                               const float* theta, const int64_t* positions, const float* log_decay,
                               float* q, float* k, float* g, float* v) {
  const int64_t dim = static_cast<int64_t>(heads) * e;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / dim;
    const int hc = static_cast<int>(i % dim);
    const int h = hc / e, c = hc % e;
    const float* row = proj + r * 4 * dim;
    const float qv = Silu(row[hc]), kv = Silu(row[dim + hc]);
    const int64_t qk = (r * heads + h) * dk;
    const bool lrpe = theta != nullptr;
    TnlQk(qv, kv, lrpe, lrpe ? theta[hc] : 0.0f, lrpe ? positions[r] : 0, e, dk, c, q + qk, k + qk);
    g[qk + c] = log_decay[h];
    if (dk > e) g[qk + e + c] = log_decay[h];
    v[(r * heads + h) * e + c] = row[2 * dim + hc];
  }
}

cudaError_t TnlGates(const float* proj, int rows, int heads, int e, int dk, const float* theta,
                     const int64_t* positions, const float* log_decay, float* q, float* k, float* g,
                     float* v, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(rows) * heads * e;
  if (total == 0) return cudaSuccess;
  TnlGatesKernel<<<GridFor(total, 256), 256, 0, stream>>>(proj, total, heads, e, dk, theta,
                                                          positions, log_decay, q, k, g, v);
  return cudaGetLastError();
}

cudaError_t GlaGates(const float* proj, int64_t proj_ld, int64_t k_off, int64_t v_off,
                     const float* gk, int rows, int heads, int kv_heads, int dk, int dv,
                     float normalizer, bool has_clamp, float clamp_min, float* q, float* k,
                     float* g, float* v, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  dim3 grid(rows, heads);
  GlaGatesKernel<<<grid, 128, 0, stream>>>(proj, proj_ld, k_off, v_off, gk, heads, kv_heads, dk, dv,
                                           normalizer, has_clamp, clamp_min, q, k, g, v);
  return cudaGetLastError();
}

cudaError_t HgrnGates(float* ifg, int rows, int width, const float* lower_bound,
                      cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(rows) * width;
  if (total == 0) return cudaSuccess;
  HgrnGatesKernel<<<GridFor(total, 256), 256, 0, stream>>>(ifg, total, width, lower_bound);
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
