// LLaMA attention pieces: RoPE, KV-cache writes, the causal softmax of the GEMM-based
// prefill, the KV-cache decode kernel, the mma.sync flash prefill kernel, and the choice
// between it and kernels_attention_wgmma.cu's.
#include <algorithm>

#include "engine/cuda/current_device.cuh"
#include "engine/cuda/decode_attention_plan.h"
#include "engine/cuda/flash_common.cuh"
#include "engine/cuda/flash_kernel_choice.h"
#include "engine/cuda/kernel_util.cuh"

namespace hgeval::cuda {
namespace {

template <typename T>
__global__ void RopeKernel(T* qkv, int heads, int kv_heads, int head_dim, const int64_t* positions,
                           double theta) {
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
__global__ void KvWriteKernel(const T* qkv, const int32_t* row_seq, int heads, int kv_heads,
                              int head_dim, void* const* cache_ptrs, const int64_t* caps,
                              const int64_t* positions, int layer) {
  const int r = blockIdx.x;
  const int s = row_seq[r];
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
__global__ void CausalSoftmaxKernel(const float* scores, int tq, int tk, int64_t q_pos0, T* probs) {
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

constexpr int kAttnWarps = 4;
// Rows of a shared item in the CUDA-core decode kernel (registers bound it).
constexpr int kDecodeVecShareRows = 8;
constexpr int kMaxHeadDim = 256;
constexpr int kDimPerLane = kMaxHeadDim / 32;

// The keys [begin, end) of an item's window: the whole window for rows that share it
// (full windows only), else up to the row's own last key.
struct KeyRange {
  int64_t begin, end;
};
__device__ __forceinline__ KeyRange WindowKeys(const DecodeAttentionItem& item,
                                               const int64_t* positions) {
  const int64_t begin = static_cast<int64_t>(item.window) * kDecodeWindowKeys;
  const int64_t nkeys = positions[item.rows[0]] + 1;
  return {begin, begin + kDecodeWindowKeys < nkeys ? begin + kDecodeWindowKeys : nkeys};
}

// Where window `window` of (row, head h) keeps its (max, sum, output) in `part`.
__device__ __forceinline__ int64_t WindowOffset(int row, int heads, int h, int max_windows,
                                                int window, int head_dim) {
  return ((static_cast<int64_t>(row) * heads + h) * max_windows + window) * (head_dim + 2);
}

// The end of a decode window: merges the block's `groups` partial softmax states (running
// max m[g], sum l[g], unnormalised output acc[g * acc_stride + d], in shared memory and
// complete) in group order and writes the window's (max, sum, output) to `out`.
__device__ void WriteDecodeWindow(const float* m, const float* l, const float* acc, int acc_stride,
                                  int groups, int head_dim, float* out) {
  float mx = m[0];
  for (int g = 1; g < groups; ++g) mx = fmaxf(mx, m[g]);
  const bool empty = mx == -INFINITY;
  if (threadIdx.x == 0) {
    float den = 0.0f;
    if (!empty) {
      for (int g = 0; g < groups; ++g) den = fmaf(l[g], __expf(m[g] - mx), den);
    }
    out[0] = mx;
    out[1] = den;
  }
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float num = 0.0f;
    if (!empty) {
      for (int g = 0; g < groups; ++g) num = fmaf(acc[g * acc_stride + d], __expf(m[g] - mx), num);
    }
    out[2 + d] = num;
  }
}

// Decode attention, pass 1, any head dim: one row per item (plans of max_share 1). Grid
// (blocks, H), kAttnWarps warps; a block takes items blockIdx.x, + gridDim.x, ... Warp w
// takes keys w, w + kAttnWarps, ... of the window; lanes split the head dimension.
template <typename T>
__global__ void __launch_bounds__(kAttnWarps * 32)
    DecodeAttentionKernel(const T* qkv, int heads, int kv_heads, int head_dim,
                          void* const* cache_ptrs, const int64_t* caps, const int64_t* positions,
                          int layer, float scale, const DecodeAttentionPlanHeader* plan,
                          int max_windows, float* part) {
  __shared__ float sm[kAttnWarps], sl[kAttnWarps];
  __shared__ float sacc[kAttnWarps][kMaxHeadDim];
  const DecodeAttentionItem* items = reinterpret_cast<const DecodeAttentionItem*>(plan + 1);
  const int h = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hk = h / (heads / kv_heads);
  const int width = kv_heads * head_dim;
  const int num_items = plan->items;
  for (int it = blockIdx.x; it < num_items; it += gridDim.x) {
    const DecodeAttentionItem item = items[it];
    const int r = item.rows[0];
    const T* cache = static_cast<const T*>(cache_ptrs[r]);
    const int64_t cap = caps[r];
    const auto [js, je] = WindowKeys(item, positions);
    const T* kbase = cache + static_cast<int64_t>(layer) * 2 * cap * width + hk * head_dim;
    const T* vbase = cache + (static_cast<int64_t>(layer) * 2 + 1) * cap * width + hk * head_dim;
    const T* qrow =
        qkv + static_cast<int64_t>(r) * (heads + 2 * kv_heads) * head_dim + h * head_dim;
    float qv[kDimPerLane], acc[kDimPerLane];
#pragma unroll
    for (int u = 0; u < kDimPerLane; ++u) {
      const int d = lane + 32 * u;
      qv[u] = d < head_dim ? __fmul_rn(ToF(qrow[d]), scale) : 0.0f;
      acc[u] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = js + warp; j < je; j += kAttnWarps) {
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
      for (int u = 0; u < kDimPerLane; ++u) acc[u] = fmaf(acc[u], corr, __fmul_rn(p, vv[u]));
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
    WriteDecodeWindow(sm, sl, &sacc[0][0], kMaxHeadDim, kAttnWarps, head_dim,
                      part + WindowOffset(r, heads, h, max_windows, item.window, head_dim));
    __syncthreads();  // the next item reuses the shared arrays
  }
}

// Eight bf16 or four fp32 values, one 16-byte load.
template <typename T>
struct Vec16 {
  static constexpr int kSize = 16 / sizeof(T);
  uint4 raw;
  __device__ __forceinline__ void Load(const T* p) { raw = *reinterpret_cast<const uint4*>(p); }
  __device__ __forceinline__ void Zero() { raw = make_uint4(0, 0, 0, 0); }
  __device__ __forceinline__ void ToFloats(float* out) const {
    if constexpr (sizeof(T) == 4) {
      out[0] = __uint_as_float(raw.x);
      out[1] = __uint_as_float(raw.y);
      out[2] = __uint_as_float(raw.z);
      out[3] = __uint_as_float(raw.w);
    } else {
      const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(pairs[i]);
        out[2 * i] = f.x;
        out[2 * i + 1] = f.y;
      }
    }
  }
};

// Decode attention, pass 1, for head dims of kLanesPerKey 16-byte vectors (kLanesPerKey a
// power of two up to 32: bf16 head dims 16..256, fp32 8..128). Grid (blocks, H),
// kAttnWarps warps; a block takes items blockIdx.x, + gridDim.x, ... A key takes
// kLanesPerKey lanes, a warp reads 32 / kLanesPerKey neighbouring keys at once and each
// lane has kUnroll keys' K and V rows in flight, so the loop runs at memory bandwidth.
// The keys an item loads serve each of its up to kRows rows in turn. kRows = 1 runs the
// plan's one-row items, kRows = kDecodeVecShareRows (a kernel of more registers, fewer
// blocks an SM) its shared ones; every op is rounded as written (no contraction left to the
// compiler), so a row's bits are the same from either kernel, alone or with sharers.
template <typename T, int kLanesPerKey, int kRows>
__global__ void __launch_bounds__(kAttnWarps * 32)
    DecodeAttentionVecKernel(const T* qkv, int heads, int kv_heads, void* const* cache_ptrs,
                             const int64_t* caps, const int64_t* positions, int layer, float scale,
                             const DecodeAttentionPlanHeader* plan, int max_windows, float* part) {
  using V = Vec16<T>;
  constexpr int kVec = V::kSize;
  constexpr int kHeadDim = kLanesPerKey * kVec;
  constexpr int kKeysPerWarp = 32 / kLanesPerKey;
  constexpr int kGroups = kAttnWarps * kKeysPerWarp;  // keys side by side in the block
  constexpr int kUnroll = 4;
  __shared__ float sm[kGroups], sl[kGroups];
  __shared__ float sacc[kGroups][kHeadDim];
  const DecodeAttentionItem* items = reinterpret_cast<const DecodeAttentionItem*>(plan + 1);
  const int h = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int slice = lane % kLanesPerKey;  // which kVec values of the head this lane holds
  const int group = warp * kKeysPerWarp + lane / kLanesPerKey;
  const int hk = h / (heads / kv_heads);
  const int width = kv_heads * kHeadDim;
  const int64_t qkv_stride = static_cast<int64_t>(heads + 2 * kv_heads) * kHeadDim;
  const int first = kRows > 1 ? 0 : plan->shared_items;
  const int end = kRows > 1 ? plan->shared_items : plan->items;
  for (int it = first + blockIdx.x; it < end; it += gridDim.x) {
    const DecodeAttentionItem item = items[it];
    const int n = item.count;
    const int r0 = item.rows[0];
    const T* cache = static_cast<const T*>(cache_ptrs[r0]);
    const int64_t cap = caps[r0];
    const auto [js, je] = WindowKeys(item, positions);
    const T* kbase =
        cache + static_cast<int64_t>(layer) * 2 * cap * width + hk * kHeadDim + slice * kVec;
    const T* vbase =
        cache + (static_cast<int64_t>(layer) * 2 + 1) * cap * width + hk * kHeadDim + slice * kVec;
    float qv[kRows][kVec], acc[kRows][kVec], m[kRows], l[kRows];
#pragma unroll
    for (int g = 0; g < kRows; ++g) {
      m[g] = -INFINITY;
      l[g] = 0.0f;
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        qv[g][i] = 0.0f;
        acc[g][i] = 0.0f;
      }
      if (g < n) {
        V q;
        q.Load(qkv + item.rows[g] * qkv_stride + h * kHeadDim + slice * kVec);
        q.ToFloats(qv[g]);
#pragma unroll
        for (int i = 0; i < kVec; ++i) qv[g][i] = __fmul_rn(qv[g][i], scale);
      }
    }
    // The loop bound is the block's, so every lane of a warp shuffles together.
    for (int64_t base = js; base < je; base += kGroups * kUnroll) {
      V kv[kUnroll], vv[kUnroll];
      bool valid[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t j = base + u * kGroups + group;
        valid[u] = j < je;
        if (valid[u]) {
          kv[u].Load(kbase + j * width);
          vv[u].Load(vbase + j * width);
        } else {
          kv[u].Zero();
          vv[u].Zero();
        }
      }
#pragma unroll
      for (int g = 0; g < kRows; ++g) {
        if (g >= n) break;
        float s[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          float k[kVec];
          kv[u].ToFloats(k);
          float dot = 0.0f;
#pragma unroll
          for (int i = 0; i < kVec; ++i) dot = fmaf(qv[g][i], k[i], dot);
          s[u] = dot;
        }
#pragma unroll
        for (int off = kLanesPerKey / 2; off > 0; off >>= 1) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u) {
            s[u] = __fadd_rn(s[u], __shfl_xor_sync(0xffffffffu, s[u], off));
          }
        }
        float new_m = m[g];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (valid[u]) new_m = fmaxf(new_m, s[u]);
        }
        if (new_m == -INFINITY) continue;  // none of this lane's keys yet
        const float corr = __expf(m[g] - new_m);
        l[g] = __fmul_rn(l[g], corr);
#pragma unroll
        for (int i = 0; i < kVec; ++i) acc[g][i] = __fmul_rn(acc[g][i], corr);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (!valid[u]) continue;
          const float p = __expf(s[u] - new_m);
          l[g] = __fadd_rn(l[g], p);
          float v[kVec];
          vv[u].ToFloats(v);
#pragma unroll
          for (int i = 0; i < kVec; ++i) acc[g][i] = fmaf(p, v[i], acc[g][i]);
        }
        m[g] = new_m;
      }
    }
#pragma unroll
    for (int g = 0; g < kRows; ++g) {
      if (g >= n) break;
      if (slice == 0) {
        sm[group] = m[g];
        sl[group] = l[g];
      }
#pragma unroll
      for (int i = 0; i < kVec; ++i) sacc[group][slice * kVec + i] = acc[g][i];
      __syncthreads();
      WriteDecodeWindow(
          sm, sl, &sacc[0][0], kHeadDim, kGroups, kHeadDim,
          part + WindowOffset(item.rows[g], heads, h, max_windows, item.window, kHeadDim));
      __syncthreads();  // the next row (or item) reuses the shared arrays
    }
  }
}

// Pass 2: merge a row's windows in window order. Grid (rows, H).
template <typename T>
__global__ void DecodeCombineKernel(int heads, int head_dim, void* const* cache_ptrs,
                                    const int64_t* positions, int max_windows, const float* part,
                                    T* o) {
  const int r = blockIdx.x, h = blockIdx.y;
  if (cache_ptrs[r] == nullptr) return;
  const int windows = static_cast<int>(DecodeWindows(positions[r] + 1));
  const float* in = part + WindowOffset(r, heads, h, max_windows, 0, head_dim);
  float mx = -INFINITY;
  for (int z = 0; z < windows; ++z) mx = fmaxf(mx, in[z * (head_dim + 2)]);
  float den = 0.0f;
  for (int z = 0; z < windows; ++z) {
    const float mz = in[z * (head_dim + 2)];
    if (mz != -INFINITY) den = fmaf(in[z * (head_dim + 2) + 1], __expf(mz - mx), den);
  }
  T* orow = o + static_cast<int64_t>(r) * heads * head_dim + h * head_dim;
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float num = 0.0f;
    for (int z = 0; z < windows; ++z) {
      const float mz = in[z * (head_dim + 2)];
      if (mz != -INFINITY) num = fmaf(in[z * (head_dim + 2) + 2 + d], __expf(mz - mx), num);
    }
    orow[d] = FromF<T>(num / den);
  }
}

// ---- flash prefill (bf16, mma.sync m16n8k16) -----------------------------------------

constexpr int kFlashRows = kFlashTileRows;  // queries per block (4 warps x 32)
constexpr int kFlashThreads = kFlashRows;

__device__ __forceinline__ void Mma16816(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 bf16 matrices from shared memory (lane l gives row l % 8 of matrix l / 8);
// `.trans` hands each thread a column pair instead of a row pair.
__device__ __forceinline__ void LdMatrixX4(uint32_t* r, const void* smem) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t* r, const void* smem) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// Decode attention, pass 1, on tensor cores (bf16, head dim HD of 32, 64 or 128): an
// item's rows (up to 16, one m16 tile; the others zero) against its window's keys. Grid
// (blocks, H), kAttnWarps warps; a block takes items blockIdx.x, + gridDim.x, ...; warp w
// takes the window's keys [64 w, 64 w + 64) in four 16-key steps that stream through its
// own two shared-memory stages (cp.async), S = Q Kᵀ and O += P V on mma.sync (P in bf16,
// as the flash prefill), the online softmax per row in fp32; the four warps' states merge
// in warp order. A row's values never meet another row's (an mma row is its A row's alone,
// the softmax reduces within a row), so a row's bits do not depend on its item's others.
constexpr int kMmaDecodeSubKeys = 16;
template <int HD>
constexpr int MmaDecodeSmemBytes() {
  constexpr int kS = HD + 8;
  constexpr int kLoad = (16 * kS + kAttnWarps * 2 * 2 * kMmaDecodeSubKeys * kS) * 2;
  constexpr int kMerge = (kAttnWarps * 16 * HD + 2 * kAttnWarps * 16) * 4;
  return kLoad > kMerge ? kLoad : kMerge;
}

template <int HD>
__global__ void __launch_bounds__(kAttnWarps * 32)
    DecodeAttentionMmaKernel(const bf16* qkv, int heads, int kv_heads, void* const* cache_ptrs,
                             const int64_t* caps, const int64_t* positions, int layer, float scale,
                             const DecodeAttentionPlanHeader* plan, int max_windows, float* part) {
  constexpr int kS = HD + 8;  // padded rows: the 8 rows an ldmatrix reads hit distinct banks
  constexpr int kSub = kMmaDecodeSubKeys;
  constexpr int kWarpKeys = kDecodeWindowKeys / kAttnWarps;
  constexpr int kSubs = kWarpKeys / kSub;
  constexpr int kStage = 2 * kSub * kS;   // K then V of one step
  constexpr int kChunks = kSub * HD / 8;  // 16-byte pieces of K (or V) in one step
  static_assert(kChunks % 32 == 0, "a step's pieces split evenly over a warp");
  extern __shared__ __align__(16) unsigned char decode_smem[];
  bf16* sq = reinterpret_cast<bf16*>(decode_smem);
  const DecodeAttentionItem* items = reinterpret_cast<const DecodeAttentionItem*>(plan + 1);
  const int h = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, tq = lane & 3;
  bf16* wkv = sq + 16 * kS + warp * 2 * kStage;
  const int hk = h / (heads / kv_heads);
  const int64_t kvw = static_cast<int64_t>(kv_heads) * HD;
  const int64_t qstride = static_cast<int64_t>(heads + 2 * kv_heads) * HD;
  const int num_items = plan->items;
  for (int it = blockIdx.x; it < num_items; it += gridDim.x) {
    const DecodeAttentionItem item = items[it];
    const int n = item.count;
    const bf16* cache = static_cast<const bf16*>(cache_ptrs[item.rows[0]]);
    const int64_t cap = caps[item.rows[0]];
    // Plain names, not a structured binding: load_step captures je (C++17 cannot).
    const KeyRange window = WindowKeys(item, positions);
    const int64_t js = window.begin, je = window.end;
    const bf16* kp = cache + static_cast<int64_t>(layer) * 2 * cap * kvw + hk * HD;
    const bf16* vp = kp + cap * kvw;
    const int64_t wk0 = js + warp * kWarpKeys;
    __syncthreads();  // the previous item's merge is done with the shared memory
    for (int idx = tid; idx < 16 * HD / 8; idx += kAttnWarps * 32) {
      const int r = idx / (HD / 8), c8 = (idx % (HD / 8)) * 8;
      const bool valid = r < n;
      CpAsync16(sq + r * kS + c8, qkv + (valid ? item.rows[r] * qstride + h * HD + c8 : 0), valid);
    }
    auto load_step = [&](int t) {
      bf16* dst = wkv + (t & 1) * kStage;
#pragma unroll
      for (int i = 0; i < kChunks / 32; ++i) {
        const int idx = lane + 32 * i;
        const int kr = idx / (HD / 8), c8 = (idx % (HD / 8)) * 8;
        const int64_t key = wk0 + t * kSub + kr;
        const bool valid = key < je;
        const int64_t off = (valid ? key * kvw : 0) + c8;
        CpAsync16(dst + kr * kS + c8, kp + off, valid);
        CpAsync16(dst + (kSub + kr) * kS + c8, vp + off, valid);
      }
    };
    load_step(0);
    CpAsyncCommit();
    float o[HD / 8][4];
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
#pragma unroll
      for (int x = 0; x < 4; ++x) o[nt][x] = 0.0f;
    }
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    uint32_t qa[HD / 16][4];
#pragma unroll
    for (int t = 0; t < kSubs; ++t) {
      if (t + 1 < kSubs) {
        load_step(t + 1);
        CpAsyncCommit();
        CpAsyncWait<1>();
      } else {
        CpAsyncWait<0>();
      }
      if (t == 0) {
        __syncthreads();  // Q (every thread's pieces) and step 0 are in shared memory
#pragma unroll
        for (int ks = 0; ks < HD / 16; ++ks) {
          LdMatrixX4(qa[ks], sq + (lane & 15) * kS + ks * 16 + (lane >> 4) * 8);
        }
      } else {
        __syncwarp();  // step t (the warp's own pieces) is in shared memory
      }
      const bf16* tk = wkv + (t & 1) * kStage;
      const bf16* tv = tk + kSub * kS;
      // S = Q Kᵀ: 16 rows x 16 keys (two 8-key blocks per ldmatrix).
      float sc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
      for (int ks = 0; ks < HD / 16; ++ks) {
        uint32_t kb[4];
        LdMatrixX4(kb, tk + ((lane >> 4) * 8 + (lane & 7)) * kS + ks * 16 + ((lane >> 3) & 1) * 8);
        Mma16816(sc[0], qa[ks], kb[0], kb[1]);
        Mma16816(sc[1], qa[ks], kb[2], kb[3]);
      }
      // Scale, mask the keys past the window, online softmax for rows g and g + 8.
      float tmax[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int64_t key = wk0 + t * kSub + nt * 8 + 2 * tq + (x & 1);
          const float v = key < je ? sc[nt][x] * scale : -INFINITY;
          sc[nt][x] = v;
          tmax[x >> 1] = fmaxf(tmax[x >> 1], v);
        }
      }
      float corr[2], safe[2], rsum[2] = {0.0f, 0.0f};
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        tmax[rr] = fmaxf(tmax[rr], __shfl_xor_sync(0xffffffffu, tmax[rr], 1));
        tmax[rr] = fmaxf(tmax[rr], __shfl_xor_sync(0xffffffffu, tmax[rr], 2));
        const float new_m = fmaxf(m[rr], tmax[rr]);
        safe[rr] = new_m == -INFINITY ? 0.0f : new_m;
        corr[rr] = __expf(m[rr] - safe[rr]);
        m[rr] = new_m;
      }
      float p[2][4];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          p[nt][x] = __expf(sc[nt][x] - safe[x >> 1]);
          rsum[x >> 1] += p[nt][x];
        }
      }
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 1);
        rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 2);
        l[rr] = l[rr] * corr[rr] + rsum[rr];
      }
      // P as the A fragment of one 16-key step; O += P V (V^T fragments of two 8-dim tiles
      // per ldmatrix.trans).
      const uint32_t pa[4] = {Pack2(p[0][0], p[0][1]), Pack2(p[0][2], p[0][3]),
                              Pack2(p[1][0], p[1][1]), Pack2(p[1][2], p[1][3])};
#pragma unroll
      for (int nt = 0; nt < HD / 8; ++nt) {
        o[nt][0] *= corr[0];
        o[nt][1] *= corr[0];
        o[nt][2] *= corr[1];
        o[nt][3] *= corr[1];
      }
#pragma unroll
      for (int nt = 0; nt < HD / 8; nt += 2) {
        uint32_t vb[4];
        LdMatrixX4Trans(vb,
                        tv + (((lane >> 3) & 1) * 8 + (lane & 7)) * kS + nt * 8 + (lane >> 4) * 8);
        Mma16816(o[nt], pa, vb[0], vb[1]);
        Mma16816(o[nt + 1], pa, vb[2], vb[3]);
      }
      __syncwarp();  // the stage is read before the next load overwrites it
    }
    // The four warps' (max, sum, output) per row through shared memory, merged in warp order.
    __syncthreads();                                    // every warp is done with Q and its stages
    float* so = reinterpret_cast<float*>(decode_smem);  // [warp][16][HD]
    float* sm = so + kAttnWarps * 16 * HD;              // [warp][16]
    float* sl = sm + kAttnWarps * 16;
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        so[(warp * 16 + g + 8 * (x >> 1)) * HD + nt * 8 + 2 * tq + (x & 1)] = o[nt][x];
      }
    }
    if (tq == 0) {
      sm[warp * 16 + g] = m[0];
      sm[warp * 16 + g + 8] = m[1];
      sl[warp * 16 + g] = l[0];
      sl[warp * 16 + g + 8] = l[1];
    }
    __syncthreads();
    for (int idx = tid; idx < n * HD; idx += kAttnWarps * 32) {
      const int r = idx / HD, d = idx % HD;
      float mx = sm[r];
#pragma unroll
      for (int w = 1; w < kAttnWarps; ++w) mx = fmaxf(mx, sm[w * 16 + r]);
      float num = 0.0f, den = 0.0f;
#pragma unroll
      for (int w = 0; w < kAttnWarps; ++w) {
        const float mw = sm[w * 16 + r];
        if (mw == -INFINITY) continue;
        const float e = __expf(mw - mx);
        num = fmaf(so[(w * 16 + r) * HD + d], e, num);
        den = fmaf(sl[w * 16 + r], e, den);
      }
      float* out = part + WindowOffset(item.rows[r], heads, h, max_windows, item.window, HD);
      out[2 + d] = num;
      if (d == 0) {
        out[0] = mx;
        out[1] = den;
      }
    }
  }
}

// Grid (H, tiles), kFlashThreads threads: the head is the fastest grid index and tiles go
// from the last (most keys) to the first, so the longest blocks start first and the short
// ones fill the tail. smem: Q [128][HD+8] (re-read for every key tile) and two stages of
// K [kKeys][HD+8] and V [kKeys][HD+8] (keys row-major, as in the cache).
// Keys per K/V tile. At head dim 128 a warp's S tile (32 x 64 fp32) and O accumulators
// (32 x 128 fp32) spill 68 bytes at two blocks per SM, yet run 11% faster than 32-key
// tiles without spills (docs/cuda.md, Performance log 5).
constexpr int kFlashKeys = 64;

// FlashAttention-2's layout on mma.sync: each warp owns 32 query rows (two m16 blocks), so
// every K and V fragment read from shared memory feeds two mmas, and Q fragments are
// re-read from shared memory per key tile instead of pinning registers. A warp whose rows
// all precede a tile skips it (its softmax state would not change: every p would be 0),
// as does a warp of a partial tile with no rows;
// only tiles that cross a warp's diagonal evaluate the causal mask.
template <int HD>
__global__ void __launch_bounds__(kFlashThreads, 2)
    FlashPrefillKernel(FlashSource src, int heads, int kv_heads, float scale_log2) {
  constexpr int kKeys = kFlashKeys;
  // Rows padded by 16 bytes: the 8 rows an ldmatrix reads fall in distinct banks.
  constexpr int kQS = HD + 8;
  constexpr int kTile = kKeys * kQS;  // one K or V stage
  constexpr int kNt = kKeys / 8;      // 8-key column blocks of S
  extern __shared__ __align__(16) unsigned char flash_smem[];
  bf16* sq = reinterpret_cast<bf16*>(flash_smem);
  bf16* sk = sq + kFlashRows * kQS;  // stages 0, 1
  bf16* sv = sk + 2 * kTile;         // stages 0, 1
  const int h = blockIdx.x;
  const int tile = gridDim.y - 1 - blockIdx.y;
  const int hk = h / (heads / kv_heads);
  const FlashTile ft = ResolveFlashTile(src, tile, heads, kv_heads, HD);
  const bf16* qkv = ft.qkv;
  const bf16* kp = ft.kp;
  const bf16* vp = ft.vp;
  bf16* o = ft.o;
  const int rows = ft.rows, q0 = ft.q0;
  const int64_t pos0 = ft.pos0;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t qstride = static_cast<int64_t>(heads + 2 * kv_heads) * HD;
  const int64_t kvstride = static_cast<int64_t>(kv_heads) * HD;
  const int64_t last_key = pos0 + min(q0 + kFlashRows, rows) - 1;
  const int ntiles = static_cast<int>(last_key / kKeys) + 1;

  // K/V tiles stream into shared memory through cp.async, one tile ahead of the tensor
  // cores (two stages), so the loads of tile kt + 1 are in flight while tile kt computes.
  // A thread copies the same 16-byte column of every (kFlashThreads / (HD / 8))-th key
  // row of a tile: one base offset, advanced by a fixed stride.
  constexpr int kRowStep = kFlashThreads / (HD / 8);
  const int load_r = tid / (HD / 8), load_c = (tid % (HD / 8)) * 8;
  const bf16* kcol = kp + hk * HD + load_c;
  const bf16* vcol = vp + hk * HD + load_c;
  auto load_tile = [&](int kt) {
    const int64_t k0 = static_cast<int64_t>(kt) * kKeys + load_r;
    const int smem_off = (kt & 1) * kTile + load_r * kQS + load_c;
#pragma unroll
    for (int i = 0; i < kKeys / kRowStep; ++i) {
      const int64_t key = k0 + i * kRowStep;
      const bool valid = key <= last_key;
      const int64_t off = valid ? key * kvstride : 0;
      CpAsync16(sk + smem_off + i * kRowStep * kQS, kcol + off, valid);
      CpAsync16(sv + smem_off + i * kRowStep * kQS, vcol + off, valid);
    }
  };
  // Q tile -> smem with the first K/V tile (one cp.async group).
  for (int idx = tid; idx < kFlashRows * HD / 8; idx += kFlashThreads) {
    const int r = idx / (HD / 8), c8 = (idx % (HD / 8)) * 8;
    const bool valid = q0 + r < rows;
    CpAsync16(sq + r * kQS + c8, qkv + (valid ? (q0 + r) * qstride + h * HD + c8 : 0), valid);
  }
  load_tile(0);
  CpAsyncCommit();

  float acc[2][HD / 8][4];
#pragma unroll
  for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
#pragma unroll
      for (int x = 0; x < 4; ++x) acc[mb][nt][x] = 0.0f;
    }
  }
  // Row state of this thread's 4 rows (index 2 * mb + rr: row 32*warp + 16*mb + g + 8*rr),
  // the running max in scaled base-2 units.
  float m_row[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
  float l_row[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  const int wr = warp * 32;
  // Position of the warp's first query row.
  const int64_t warp_pos = pos0 + q0 + wr;

  for (int kt = 0; kt < ntiles; ++kt) {
    const int64_t k0 = static_cast<int64_t>(kt) * kKeys;
    if (kt + 1 < ntiles) {
      load_tile(kt + 1);  // into the stage tile kt - 1 used (released by the barrier below)
      CpAsyncCommit();
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    __syncthreads();  // tile kt (and Q) is in shared memory for every thread
    // Row i of the warp (0..31) sees key j of the tile (0..kKeys-1) iff j <= diag + i.
    const int64_t diag64 = warp_pos - k0;
    // Skipped when every row of the warp precedes the whole tile or lies past the rows.
    if (diag64 + 31 >= 0 && q0 + wr < rows) {
      const bool masked = diag64 < kKeys - 1;
      const int diag = masked ? static_cast<int>(diag64) : 0;
      const bf16* tk = sk + (kt & 1) * kTile;
      const bf16* tv = sv + (kt & 1) * kTile;
      // S = Q K^T for 32 rows x kKeys keys. Per 16-dim step: Q fragments of both row blocks
      // (ldmatrix: lane l addresses row l % 16 at dims + (l / 16) * 8), then K fragments of
      // two 8-key blocks per ldmatrix (lane l: key (l / 16) * 8 + l % 8, dims + (l / 8 % 2) * 8).
      float sc[2][kNt][4];
#pragma unroll
      for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int nt = 0; nt < kNt; ++nt) {
#pragma unroll
          for (int x = 0; x < 4; ++x) sc[mb][nt][x] = 0.0f;
        }
      }
#pragma unroll
      for (int ks = 0; ks < HD / 16; ++ks) {
        uint32_t qa[2][4];
#pragma unroll
        for (int mb = 0; mb < 2; ++mb) {
          LdMatrixX4(qa[mb], sq + (wr + 16 * mb + (lane & 15)) * kQS + ks * 16 + (lane >> 4) * 8);
        }
#pragma unroll
        for (int nt = 0; nt < kNt; nt += 2) {
          uint32_t kb[4];
          LdMatrixX4(kb, tk + (nt * 8 + (lane >> 4) * 8 + (lane & 7)) * kQS + ks * 16 +
                             ((lane >> 3) & 1) * 8);
#pragma unroll
          for (int mb = 0; mb < 2; ++mb) {
            Mma16816(sc[mb][nt], qa[mb], kb[0], kb[1]);
            Mma16816(sc[mb][nt + 1], qa[mb], kb[2], kb[3]);
          }
        }
      }
      // Scale to base 2, causal mask (diagonal tiles only), online softmax per row
      // (quad-reduce over tq).
      float tile_max[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
      for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int nt = 0; nt < kNt; ++nt) {
#pragma unroll
          for (int x = 0; x < 4; ++x) {
            const int rr = 2 * mb + (x >> 1);
            float v = sc[mb][nt][x] * scale_log2;
            if (masked && nt * 8 + 2 * tq + (x & 1) > diag + 16 * mb + g + 8 * (x >> 1)) {
              v = -INFINITY;
            }
            sc[mb][nt][x] = v;
            tile_max[rr] = fmaxf(tile_max[rr], v);
          }
        }
      }
      float corr[4];
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {
        tile_max[rr] = fmaxf(tile_max[rr], __shfl_xor_sync(0xffffffffu, tile_max[rr], 1));
        tile_max[rr] = fmaxf(tile_max[rr], __shfl_xor_sync(0xffffffffu, tile_max[rr], 2));
        const float new_m = fmaxf(m_row[rr], tile_max[rr]);
        const float safe_m = new_m == -INFINITY ? 0.0f : new_m;
        corr[rr] = Exp2(m_row[rr] - safe_m);
        m_row[rr] = new_m;
        tile_max[rr] = safe_m;
      }
      // P in bf16 as the A fragments of the P V product (two 8-key blocks per 16-key
      // step), packed as soon as it is computed so the fp32 S tile dies here.
      float rsum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      uint32_t pa[2][kKeys / 16][4];
#pragma unroll
      for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int nt = 0; nt < kNt; ++nt) {
          float p[4];
#pragma unroll
          for (int x = 0; x < 4; ++x) {
            const int rr = 2 * mb + (x >> 1);
            p[x] = Exp2(sc[mb][nt][x] - tile_max[rr]);
            rsum[rr] += p[x];
          }
          pa[mb][nt >> 1][(nt & 1) * 2] = Pack2(p[0], p[1]);
          pa[mb][nt >> 1][(nt & 1) * 2 + 1] = Pack2(p[2], p[3]);
        }
      }
#pragma unroll
      for (int rr = 0; rr < 4; ++rr) {
        rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 1);
        rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 2);
        l_row[rr] = l_row[rr] * corr[rr] + rsum[rr];
      }
#pragma unroll
      for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int nt = 0; nt < HD / 8; ++nt) {
          acc[mb][nt][0] *= corr[2 * mb];
          acc[mb][nt][1] *= corr[2 * mb];
          acc[mb][nt][2] *= corr[2 * mb + 1];
          acc[mb][nt][3] *= corr[2 * mb + 1];
        }
      }
      // O += P V: V^T fragments of two 8-dim tiles per ldmatrix.trans (lane l: key
      // kk*16 + (l/8 % 2)*8 + l%8 at dims nt*8 + (l/16)*8), each serving both row blocks.
#pragma unroll
      for (int kk = 0; kk < kKeys / 16; ++kk) {
#pragma unroll
        for (int nt = 0; nt < HD / 8; nt += 2) {
          uint32_t vb[4];
          LdMatrixX4Trans(vb, tv + (kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * kQS + nt * 8 +
                                  (lane >> 4) * 8);
#pragma unroll
          for (int mb = 0; mb < 2; ++mb) {
            Mma16816(acc[mb][nt], pa[mb][kk], vb[0], vb[1]);
            Mma16816(acc[mb][nt + 1], pa[mb][kk], vb[2], vb[3]);
          }
        }
      }
    }
    __syncthreads();  // this stage is free for tile kt + 2
  }
  // Normalise and store.
#pragma unroll
  for (int rr = 0; rr < 4; ++rr) {
    const int mb = rr >> 1, half = rr & 1;
    const int row = q0 + wr + 16 * mb + g + 8 * half;
    if (row >= rows) continue;
    const float inv = 1.0f / l_row[rr];
    bf16* orow = o + static_cast<int64_t>(row) * heads * HD + h * HD;
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
      *reinterpret_cast<uint32_t*>(orow + nt * 8 + 2 * tq) =
          Pack2(acc[mb][nt][2 * half] * inv, acc[mb][nt][2 * half + 1] * inv);
    }
  }
}

// Runs one of the flash kernels over `tiles` tiles of src.
template <int HD>
cudaError_t RunFlash(FlashKernel kernel, const FlashSource& src, int tiles, int heads, int kv_heads,
                     float scale, cudaStream_t stream) {
  if (kernel == FlashKernel::kWgmma) {
    if (HD != 128) return cudaErrorNotSupported;
    return LaunchFlashWgmma(src, tiles, heads, kv_heads, Log2Scale(scale), stream);
  }
  // Shared memory of a block: Q and two K and V stages.
  const size_t smem = sizeof(bf16) * (kFlashRows + 4 * kFlashKeys) * (HD + 8);
  if (cudaError_t err =
          cudaFuncSetAttribute(FlashPrefillKernel<HD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(smem));
      err != cudaSuccess) {
    return err;
  }
  dim3 grid(heads, tiles);
  FlashPrefillKernel<HD>
      <<<grid, kFlashThreads, smem, stream>>>(src, heads, kv_heads, Log2Scale(scale));
  return cudaGetLastError();
}

template <int HD>
cudaError_t LaunchFlash(FlashKernel kernel, const void* qkv, int rows, int heads, int kv_heads,
                        const void* kp, const void* vp, int64_t pos0, float scale, void* o,
                        cudaStream_t stream) {
  FlashSource src;
  src.qkv = static_cast<const bf16*>(qkv);
  src.kp = static_cast<const bf16*>(kp);
  src.vp = static_cast<const bf16*>(vp);
  src.rows = rows;
  src.pos0 = pos0;
  src.o = static_cast<bf16*>(o);
  return RunFlash<HD>(kernel, src, CeilDiv(rows, kFlashRows), heads, kv_heads, scale, stream);
}

template <int HD>
cudaError_t LaunchFlashPacked(FlashKernel kernel, const void* qkv, const PackView& pack, int heads,
                              int kv_heads, void* const* cache_ptrs, const int64_t* caps,
                              const int64_t* positions, int layer, float scale, void* o,
                              cudaStream_t stream) {
  FlashSource src;
  src.qkv = static_cast<const bf16*>(qkv);
  src.o = static_cast<bf16*>(o);
  src.pack = pack;
  src.cache_ptrs = cache_ptrs;
  src.caps = caps;
  src.positions = positions;
  src.layer = layer;
  return RunFlash<HD>(kernel, src, pack.num_tiles, heads, kv_heads, scale, stream);
}

}  // namespace

cudaError_t ApplyRope(void* qkv, Act act, int rows, int heads, int kv_heads, int head_dim,
                      const int64_t* positions, double theta, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  HG_DISPATCH_ACT(act, RopeKernel<T><<<rows, 256, 0, stream>>>(
                           static_cast<T*>(qkv), heads, kv_heads, head_dim, positions, theta));
  return cudaGetLastError();
}

cudaError_t KvWrite(const void* qkv, Act act, int rows, const int32_t* row_seq, int heads,
                    int kv_heads, int head_dim, void* const* cache_ptrs, const int64_t* caps,
                    const int64_t* positions, int layer, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  HG_DISPATCH_ACT(act, KvWriteKernel<T>
                  <<<rows, 256, 0, stream>>>(static_cast<const T*>(qkv), row_seq, heads, kv_heads,
                                             head_dim, cache_ptrs, caps, positions, layer));
  return cudaGetLastError();
}

cudaError_t CausalSoftmax(const float* scores, int nh, int tq, int tk, int64_t q_pos0, void* probs,
                          Act act, cudaStream_t stream) {
  if (nh == 0 || tq == 0) return cudaSuccess;
  dim3 grid(tq, nh);
  HG_DISPATCH_ACT(act, CausalSoftmaxKernel<T>
                  <<<grid, 256, 0, stream>>>(scores, tq, tk, q_pos0, static_cast<T*>(probs)));
  return cudaGetLastError();
}

// bf16 at these head dims runs DecodeAttentionMmaKernel.
bool DecodeOnTensorCores(Act act, int head_dim) {
  return act == Act::kBF16 && (head_dim == 32 || head_dim == 64 || head_dim == 128);
}

int DecodeAttentionShareRows(Act act, int head_dim) {
  if (DecodeOnTensorCores(act, head_dim)) return kDecodeShareRows;
  const int vec = act == Act::kBF16 ? 8 : 4;
  const int lanes = head_dim / vec;
  const bool vectorised =
      head_dim % vec == 0 && lanes >= 2 && lanes <= 32 && (lanes & (lanes - 1)) == 0;
  return vectorised ? kDecodeVecShareRows : 1;
}

namespace {

// Pass 1's blocks per head: as many as the GPU holds at once (they loop over the items),
// never more than there can be items.
template <typename Kernel>
int DecodeBlocksPerHead(Kernel kernel, int heads, int max_items, int smem_bytes = 0) {
  // Where CUDA cannot say, an H100's 132 multiprocessors and one block each.
  int sms = 132, per_sm = 1;
  const std::optional<int> multiprocessors = CurrentDeviceAttribute(cudaDevAttrMultiProcessorCount);
  int occupancy = 0;
  if (multiprocessors && cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                             &occupancy, kernel, kAttnWarps * 32, smem_bytes) == cudaSuccess) {
    sms = *multiprocessors;
    per_sm = occupancy;
  }
  const int resident = std::max(1, sms * std::max(1, per_sm) / std::max(1, heads));
  return std::max(1, std::min(resident, max_items));
}

template <int HD>
cudaError_t LaunchDecodeMma(const bf16* q, int heads, int kv_heads, void* const* cache_ptrs,
                            const int64_t* caps, const int64_t* positions, int layer, float scale,
                            const DecodeAttentionPlanHeader* plan, int max_items, int max_windows,
                            float* partial, cudaStream_t stream) {
  constexpr int kSmem = MmaDecodeSmemBytes<HD>();
  auto kernel = DecodeAttentionMmaKernel<HD>;
  cudaError_t err =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  if (err != cudaSuccess) return err;
  dim3 grid(DecodeBlocksPerHead(kernel, heads, max_items, kSmem), heads);
  kernel<<<grid, kAttnWarps * 32, kSmem, stream>>>(q, heads, kv_heads, cache_ptrs, caps, positions,
                                                   layer, scale, plan, max_windows, partial);
  return cudaGetLastError();
}

// The shared items' kernel, then the one-row items' (the plan says how many of each).
template <typename T, int kLanesPerKey>
void LaunchDecodeVec(const T* q, int heads, int kv_heads, void* const* cache_ptrs,
                     const int64_t* caps, const int64_t* positions, int layer, float scale,
                     const DecodeAttentionPlanHeader* plan, int max_items, int max_windows,
                     float* partial, cudaStream_t stream) {
  auto shared = DecodeAttentionVecKernel<T, kLanesPerKey, kDecodeVecShareRows>;
  dim3 grid(DecodeBlocksPerHead(shared, heads, max_items), heads);
  shared<<<grid, kAttnWarps * 32, 0, stream>>>(q, heads, kv_heads, cache_ptrs, caps, positions,
                                               layer, scale, plan, max_windows, partial);
  auto own = DecodeAttentionVecKernel<T, kLanesPerKey, 1>;
  grid.x = DecodeBlocksPerHead(own, heads, max_items);
  own<<<grid, kAttnWarps * 32, 0, stream>>>(q, heads, kv_heads, cache_ptrs, caps, positions, layer,
                                            scale, plan, max_windows, partial);
}

}  // namespace

cudaError_t DecodeAttention(const void* qkv, Act act, int rows, int heads, int kv_heads,
                            int head_dim, void* const* cache_ptrs, const int64_t* caps,
                            const int64_t* positions, int layer, float scale, const void* plan,
                            int max_items, int max_windows, float* partial, void* o,
                            cudaStream_t stream) {
  if (rows == 0 || max_items == 0) return cudaSuccess;
  if (head_dim > kMaxHeadDim) return cudaErrorInvalidValue;
  const auto* header = static_cast<const DecodeAttentionPlanHeader*>(plan);
  if (DecodeOnTensorCores(act, head_dim)) {
    const bf16* q = static_cast<const bf16*>(qkv);
    cudaError_t err =
        head_dim == 32 ? LaunchDecodeMma<32>(q, heads, kv_heads, cache_ptrs, caps, positions, layer,
                                             scale, header, max_items, max_windows, partial, stream)
        : head_dim == 64
            ? LaunchDecodeMma<64>(q, heads, kv_heads, cache_ptrs, caps, positions, layer, scale,
                                  header, max_items, max_windows, partial, stream)
            : LaunchDecodeMma<128>(q, heads, kv_heads, cache_ptrs, caps, positions, layer, scale,
                                   header, max_items, max_windows, partial, stream);
    if (err != cudaSuccess) return err;
    dim3 grid2(rows, heads);
    DecodeCombineKernel<bf16><<<grid2, 128, 0, stream>>>(
        heads, head_dim, cache_ptrs, positions, max_windows, partial, static_cast<bf16*>(o));
    return cudaGetLastError();
  }
  HG_DISPATCH_ACT(act, {
    const int vec = 16 / static_cast<int>(sizeof(T));
    const int lanes = head_dim / vec;
    const T* q = static_cast<const T*>(qkv);
    if (DecodeAttentionShareRows(act, head_dim) == 1) {
      auto kernel = DecodeAttentionKernel<T>;
      dim3 grid(DecodeBlocksPerHead(kernel, heads, max_items), heads);
      kernel<<<grid, kAttnWarps * 32, 0, stream>>>(q, heads, kv_heads, head_dim, cache_ptrs, caps,
                                                   positions, layer, scale, header, max_windows,
                                                   partial);
    } else if (lanes == 2) {
      LaunchDecodeVec<T, 2>(q, heads, kv_heads, cache_ptrs, caps, positions, layer, scale, header,
                            max_items, max_windows, partial, stream);
    } else if (lanes == 4) {
      LaunchDecodeVec<T, 4>(q, heads, kv_heads, cache_ptrs, caps, positions, layer, scale, header,
                            max_items, max_windows, partial, stream);
    } else if (lanes == 8) {
      LaunchDecodeVec<T, 8>(q, heads, kv_heads, cache_ptrs, caps, positions, layer, scale, header,
                            max_items, max_windows, partial, stream);
    } else if (lanes == 16) {
      LaunchDecodeVec<T, 16>(q, heads, kv_heads, cache_ptrs, caps, positions, layer, scale, header,
                             max_items, max_windows, partial, stream);
    } else {
      LaunchDecodeVec<T, 32>(q, heads, kv_heads, cache_ptrs, caps, positions, layer, scale, header,
                             max_items, max_windows, partial, stream);
    }
  });
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  dim3 grid2(rows, heads);
  HG_DISPATCH_ACT(
      act, DecodeCombineKernel<T><<<grid2, 128, 0, stream>>>(
               heads, head_dim, cache_ptrs, positions, max_windows, partial, static_cast<T*>(o)));
  return cudaGetLastError();
}

}  // namespace hgeval::cuda

namespace hgeval::cuda {

FlashKernel ChosenFlashKernel(int head_dim) {
  if (head_dim != 128 || !FlashWgmmaBuilt()) return FlashKernel::kMmaSync;
  // sm_90a machine code runs on compute capability 9.0 alone.
  return CurrentComputeCapability() == 90 ? FlashKernel::kWgmma : FlashKernel::kMmaSync;
}

cudaError_t FlashPrefillAttentionWith(FlashKernel kernel, const void* qkv, int rows, int heads,
                                      int kv_heads, int head_dim, const void* k_plane,
                                      const void* v_plane, int64_t pos0, float scale, void* o,
                                      cudaStream_t stream) {
  if (kernel == FlashKernel::kWgmma && ChosenFlashKernel(head_dim) != kernel) {
    return cudaErrorNotSupported;
  }
  if (rows == 0) return cudaSuccess;
  switch (head_dim) {
    case 32:
      return LaunchFlash<32>(kernel, qkv, rows, heads, kv_heads, k_plane, v_plane, pos0, scale, o,
                             stream);
    case 64:
      return LaunchFlash<64>(kernel, qkv, rows, heads, kv_heads, k_plane, v_plane, pos0, scale, o,
                             stream);
    case 128:
      return LaunchFlash<128>(kernel, qkv, rows, heads, kv_heads, k_plane, v_plane, pos0, scale, o,
                              stream);
    default:
      return cudaErrorNotSupported;
  }
}

cudaError_t FlashPrefillAttentionPackedWith(FlashKernel kernel, const void* qkv,
                                            const PackView& pack, int heads, int kv_heads,
                                            int head_dim, void* const* cache_ptrs,
                                            const int64_t* caps, const int64_t* positions,
                                            int layer, float scale, void* o, cudaStream_t stream) {
  if (kernel == FlashKernel::kWgmma && ChosenFlashKernel(head_dim) != kernel) {
    return cudaErrorNotSupported;
  }
  if (pack.num_tiles == 0) return cudaSuccess;
  switch (head_dim) {
    case 32:
      return LaunchFlashPacked<32>(kernel, qkv, pack, heads, kv_heads, cache_ptrs, caps, positions,
                                   layer, scale, o, stream);
    case 64:
      return LaunchFlashPacked<64>(kernel, qkv, pack, heads, kv_heads, cache_ptrs, caps, positions,
                                   layer, scale, o, stream);
    case 128:
      return LaunchFlashPacked<128>(kernel, qkv, pack, heads, kv_heads, cache_ptrs, caps, positions,
                                    layer, scale, o, stream);
    default:
      return cudaErrorNotSupported;
  }
}

cudaError_t FlashPrefillAttention(const void* qkv, int rows, int heads, int kv_heads, int head_dim,
                                  const void* k_plane, const void* v_plane, int64_t pos0,
                                  float scale, void* o, cudaStream_t stream) {
  return FlashPrefillAttentionWith(ChosenFlashKernel(head_dim), qkv, rows, heads, kv_heads,
                                   head_dim, k_plane, v_plane, pos0, scale, o, stream);
}

cudaError_t FlashPrefillAttentionPacked(const void* qkv, const PackView& pack, int heads,
                                        int kv_heads, int head_dim, void* const* cache_ptrs,
                                        const int64_t* caps, const int64_t* positions, int layer,
                                        float scale, void* o, cudaStream_t stream) {
  return FlashPrefillAttentionPackedWith(ChosenFlashKernel(head_dim), qkv, pack, heads, kv_heads,
                                         head_dim, cache_ptrs, caps, positions, layer, scale, o,
                                         stream);
}

}  // namespace hgeval::cuda
