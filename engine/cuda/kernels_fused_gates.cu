// Gate kernels fused with the chunk-local cumsum (kernels_fused_gates.h).
#include <type_traits>

#include "engine/cuda/chunk_pack.cuh"
#include "engine/cuda/gate_maths.cuh"
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/kernels_fused_gates.h"

namespace hgeval::cuda {
namespace {

// Grid (chunks, heads); thread c < e owns channel c of its head on every row of the chunk.
// The per-row maths is TnlGatesKernel's (bf16: its activation in the fast form of
// gate_maths.cuh); the decay sum runs down the chunk's rows from 0 as ChunkCumsumKernel's
// does. q, k and v are written as T (bf16: rounded to nearest); v is proj's v as it is
// (null: not written, the chunk kernels read it in place). head_g: g is [rows, heads],
// written by thread 0 (every thread's sum is the same float). q and k null (with head_g,
// no LRPE): not written, the chunk kernels read them raw and take their SiLU.
template <typename T>
__global__ void TnlGatesChunkCumsumKernel(const T* __restrict__ proj, PackView pack, int heads,
                                          int e, int dk, const float* __restrict__ theta,
                                          const int64_t* __restrict__ positions,
                                          const float* __restrict__ log_decay, bool head_g,
                                          T* __restrict__ q, T* __restrict__ k,
                                          float* __restrict__ g, T* __restrict__ v) {
  constexpr bool kFast = kFastGateMaths<T>;
  const int ch = blockIdx.x, h = blockIdx.y, c = threadIdx.x;
  if (c >= e) return;
  const int t0 = ChunkRow0(pack, ch);
  const int n = ChunkRows(pack, ch);
  const int64_t dim = static_cast<int64_t>(heads) * e;
  const int hc = h * e + c;
  const float decay = log_decay[h];
  const float th = theta != nullptr ? theta[hc] : 0.0f;
  float acc = 0.0f;
#pragma unroll 4
  for (int j = 0; j < n; ++j) {
    const int64_t r = t0 + j;
    const T* row = proj + r * 4 * dim;
    const int64_t qk = (r * heads + h) * dk;
    if (q != nullptr) {
      const float qv = GateSilu<kFast>(ToF(row[hc])), kv = GateSilu<kFast>(ToF(row[dim + hc]));
      TnlQk(qv, kv, theta != nullptr, th, theta != nullptr ? positions[r] : 0, e, dk, c, q + qk,
            k + qk);
    }
    acc += decay;
    if (head_g) {
      if (c == 0) g[r * heads + h] = acc;
    } else {
      g[qk + c] = acc;
      if (dk > e) g[qk + e + c] = acc;
    }
    if (v != nullptr) v[(r * heads + h) * e + c] = row[2 * dim + hc];
  }
}

constexpr int kHgrn2Channels = 128;  // channels per block of the HGRN2 and GLA decay kernels
constexpr int kHgrn2Threads = 512;   // threads per block of the HGRN2 and GLA decay kernels

// N consecutive values, loaded and stored as one access (N = 2: 4 bytes of bf16, 8 of fp32).
template <typename T, int N>
struct alignas(sizeof(T) * N) Values {
  T x[N];
};

// The chunk-local cumsum of the log gates a block left in shared memory: the thread's kVec
// columns (cx ..) summed down the chunk's n rows in order, from 0, as one thread walking
// the rows; row j's sums go to g + j * ld (g: the chunk's first row, the thread's column).
template <int kVec>
__device__ __forceinline__ void SumLogGatesDownRows(
    const float (&log_gate)[kGlaChunk][kHgrn2Channels], int cx, int n, float* __restrict__ g,
    int64_t ld) {
  // The rows' values are read kRowBatch at a time before any is added, so one shared-memory
  // latency covers a batch rather than each row (the adds, in row order, are the same).
  constexpr int kRowBatch = 8;
  Values<float, kVec> acc{};
  int j0 = 0;
  for (; j0 + kRowBatch <= n; j0 += kRowBatch) {
    Values<float, kVec> row[kRowBatch];
#pragma unroll
    for (int b = 0; b < kRowBatch; ++b) {
      row[b] = *reinterpret_cast<const Values<float, kVec>*>(&log_gate[j0 + b][cx]);
    }
#pragma unroll
    for (int b = 0; b < kRowBatch; ++b) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc.x[e] += row[b].x[e];
      *reinterpret_cast<Values<float, kVec>*>(g + (j0 + b) * ld) = acc;
    }
  }
  for (int j = j0; j < n; ++j) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc.x[e] += log_gate[j][cx + e];
    *reinterpret_cast<Values<float, kVec>*>(g + j * ld) = acc;
  }
}

// Grid (chunks, dim / 128), block (128 / kVec, 4 kVec): thread (x, y) computes the gates of
// channels kVec x .. kVec x + kVec - 1 of the block on rows y, y + 4 kVec, ... of the chunk
// (all loads in flight; kVec = 2 where dim is even: one 2-value access a tensor a row; the
// per-row maths is Hgrn2GatesKernel's in fp32, the fast forms of gate_maths.cuh in bf16)
// and leaves the log gates in shared memory; then the y = 0 threads sum them down the rows
// in order, as one thread walking the rows did. qfi is read and q, k and v are written as
// T.
template <typename T, int kVec>
__global__ void __launch_bounds__(kHgrn2Threads)
    Hgrn2GatesChunkCumsumKernel(const T* __restrict__ qfi, PackView pack, int dim,
                                const float* __restrict__ lower_bound, T* __restrict__ q,
                                T* __restrict__ k, float* __restrict__ g, T* __restrict__ v) {
  using Vt = Values<T, kVec>;
  constexpr bool kFast = kFastGateMaths<T>;
  constexpr int kRowGroups = kHgrn2Threads / (kHgrn2Channels / kVec);
  __shared__ __align__(16) float log_gate[kGlaChunk][kHgrn2Channels];
  const int ch = blockIdx.x;
  const int x = threadIdx.x, y = threadIdx.y;
  const int cx = kVec * x;  // the thread's first channel within the block
  const int c = blockIdx.y * kHgrn2Channels + cx;
  const int t0 = ChunkRow0(pack, ch), n = ChunkRows(pack, ch);
  const bool live = c < dim;  // kVec = 2: dim is even, so c + 1 < dim too
  const bool has_lb = lower_bound != nullptr;
  const bool write_qv = q != nullptr;  // q and v are written or read in place together
  if (live) {
    float lb[kVec];
#pragma unroll
    for (int e = 0; e < kVec; ++e) lb[e] = has_lb ? lower_bound[c + e] : 0.0f;
#pragma unroll 4
    for (int j = y; j < n; j += kRowGroups) {
      const int r = t0 + j;
      const T* row = qfi + static_cast<int64_t>(r) * 3 * dim;
      const int64_t i = static_cast<int64_t>(r) * dim + c;
      const Vt fv = *reinterpret_cast<const Vt*>(row + dim + c);
      // q and v null: the chunk kernels read them in place from qfi instead (v is i as it
      // is; the output kernel takes q's SiLU).
      Vt qv{}, iv{};
      if (write_qv) {
        qv = *reinterpret_cast<const Vt*>(row + c);
        iv = *reinterpret_cast<const Vt*>(row + 2 * dim + c);
      }
      Vt qo, ko;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        float key;
        Hgrn2KeyAndLogGate<kFast>(ToF(fv.x[e]), has_lb, lb[e], &key, &log_gate[j][cx + e]);
        qo.x[e] = FromF<T>(GateSilu<kFast>(ToF(qv.x[e])));
        ko.x[e] = FromF<T>(key);
      }
      *reinterpret_cast<Vt*>(k + i) = ko;
      if (write_qv) {
        *reinterpret_cast<Vt*>(q + i) = qo;
        *reinterpret_cast<Vt*>(v + i) = iv;
      }
    }
  }
  __syncthreads();
  if (!live || y != 0) return;
  SumLogGatesDownRows<kVec>(log_gate, cx, n, g + static_cast<int64_t>(t0) * dim + c, dim);
}

// Grid (chunks, heads); threads over max(dk, dv) channels. GlaGatesKernel's maths per row,
// accurate in both modes (the fast log-sigmoid measured slower here: performance log entry
// 31); proj is read as TP, q, k and v are written as T (v, or q and k, null: not written).
template <typename TP, typename T>
__global__ void GlaGatesChunkCumsumKernel(
    const TP* __restrict__ proj, int64_t proj_ld, int64_t k_off, int64_t v_off,
    const float* __restrict__ gk, const float* __restrict__ gk_bias, PackView pack, int heads,
    int kv_heads, int dk, int dv, float normalizer, bool has_clamp, float clamp_min,
    T* __restrict__ q, T* __restrict__ k, float* __restrict__ g, T* __restrict__ v) {
  const int ch = blockIdx.x, h = blockIdx.y;
  const int group = heads / kv_heads;
  const int hk = h / group;
  const int t0 = ChunkRow0(pack, ch);
  const int n = ChunkRows(pack, ch);
  const int64_t kdim_kv = static_cast<int64_t>(kv_heads) * dk;
  for (int c = threadIdx.x; c < dk; c += blockDim.x) {
    const float bias = gk_bias[hk * dk + c];
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) {
      const int64_t r = t0 + j;
      const TP* row = proj + r * proj_ld;
      const int64_t o = (r * heads + h) * dk + c;
      if (q != nullptr) {  // null: the chunk kernels read q and k in place
        q[o] = FromF<T>(ToF(row[static_cast<int64_t>(h) * dk + c]));
        k[o] = FromF<T>(ToF(row[k_off + static_cast<int64_t>(hk) * dk + c]));
      }
      float gv = LogSigmoid(gk[r * kdim_kv + hk * dk + c] + bias) / normalizer;
      if (has_clamp) gv = fmaxf(gv, clamp_min);
      acc += gv;
      g[o] = acc;
    }
  }
  if (v == nullptr) return;
  for (int c = threadIdx.x; c < dv; c += blockDim.x) {
    for (int j = 0; j < n; ++j) {
      const int64_t r = t0 + j;
      v[(r * heads + h) * dv + c] =
          FromF<T>(ToF(proj[r * proj_ld + v_off + static_cast<int64_t>(hk) * dv + c]));
    }
  }
}

// GLA's decays alone, where the chunk kernels read q, k and v in place: grid (chunks,
// key columns / 128), Hgrn2GatesChunkCumsumKernel's layout. Thread (x, y) computes the log
// gates of key columns kVec x .. of the block (GlaGatesChunkCumsumKernel's maths, column
// h dk + c, gk's column that of h's k head) on rows y, y + 4 kVec, ... of the chunk into
// shared memory, all loads in flight; then the y = 0 threads sum them down the rows in
// order, the very floats the one-thread-a-channel walk gives.
template <int kVec>
__global__ void __launch_bounds__(kHgrn2Threads)
    GlaDecayChunkCumsumKernel(const float* __restrict__ gk, const float* __restrict__ gk_bias,
                              PackView pack, int heads, int kv_heads, int dk, float normalizer,
                              bool has_clamp, float clamp_min, float* __restrict__ g) {
  using Vf = Values<float, kVec>;
  constexpr int kRowGroups = kHgrn2Threads / (kHgrn2Channels / kVec);
  __shared__ __align__(16) float log_gate[kGlaChunk][kHgrn2Channels];
  const int ch = blockIdx.x, x = threadIdx.x, y = threadIdx.y;
  const int cx = kVec * x;  // the thread's first column within the block
  const int64_t dim = static_cast<int64_t>(heads) * dk;
  const int col = blockIdx.y * kHgrn2Channels + cx;  // h dk + c; kVec 2: dk even, one head
  const int t0 = ChunkRow0(pack, ch), n = ChunkRows(pack, ch);
  const bool live = col < dim;
  const int h = col / dk, c = col % dk;
  const int64_t kdim_kv = static_cast<int64_t>(kv_heads) * dk;
  const int gk_col = (h / (heads / kv_heads)) * dk + c;
  if (live) {
    const Vf bias = *reinterpret_cast<const Vf*>(gk_bias + gk_col);
#pragma unroll 4
    for (int j = y; j < n; j += kRowGroups) {
      const Vf v = *reinterpret_cast<const Vf*>(gk + (t0 + j) * kdim_kv + gk_col);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        float gv = LogSigmoid(v.x[e] + bias.x[e]) / normalizer;
        if (has_clamp) gv = fmaxf(gv, clamp_min);
        log_gate[j][cx + e] = gv;
      }
    }
  }
  __syncthreads();
  if (!live || y != 0) return;
  SumLogGatesDownRows<kVec>(log_gate, cx, n, g + t0 * dim + col, dim);
}

template <typename T, int kVec>
void LaunchHgrn2Gates(dim3 grid, const void* qfi, const PackView& pack, int dim,
                      const float* lower_bound, void* q, void* k, float* g, void* v,
                      cudaStream_t stream) {
  const dim3 block(kHgrn2Channels / kVec, kHgrn2Threads / (kHgrn2Channels / kVec));
  Hgrn2GatesChunkCumsumKernel<T, kVec>
      <<<grid, block, 0, stream>>>(static_cast<const T*>(qfi), pack, dim, lower_bound,
                                   static_cast<T*>(q), static_cast<T*>(k), g, static_cast<T*>(v));
}

}  // namespace

cudaError_t TnlGatesChunkCumsum(const void* proj, const PackView& pack, int heads, int e, int dk,
                                const float* theta, const int64_t* positions,
                                const float* log_decay, DecayLayout g_layout, void* q, void* k,
                                float* g, void* v, Act qkv_act, cudaStream_t stream) {
  if (pack.num_chunks == 0) return cudaSuccess;
  if (e > 1024) return cudaErrorInvalidValue;
  const bool head_g = g_layout == DecayLayout::kPerHead;
  const bool raw_qk = q == nullptr;  // the chunk kernels read q and k raw
  if ((k == nullptr) != raw_qk || (raw_qk && (theta != nullptr || !head_g))) {
    return cudaErrorInvalidValue;
  }
  dim3 grid(pack.num_chunks, heads);
  // Only g (thread 0) where nothing else is written.
  const int threads = raw_qk && v == nullptr ? 32 : (e + 31) / 32 * 32;
  HG_DISPATCH_ACT(qkv_act,
                  TnlGatesChunkCumsumKernel<T><<<grid, threads, 0, stream>>>(
                      static_cast<const T*>(proj), pack, heads, e, dk, theta, positions, log_decay,
                      head_g, static_cast<T*>(q), static_cast<T*>(k), g, static_cast<T*>(v)));
  return cudaGetLastError();
}

cudaError_t Hgrn2GatesChunkCumsum(const void* qfi, const PackView& pack, int dim,
                                  const float* lower_bound, void* q, void* k, float* g, void* v,
                                  Act qkv_act, cudaStream_t stream) {
  if (pack.num_chunks == 0) return cudaSuccess;
  if ((q == nullptr) != (v == nullptr)) return cudaErrorInvalidValue;
  dim3 grid(pack.num_chunks, (dim + kHgrn2Channels - 1) / kHgrn2Channels);
  // Pairs of channels where dim is even (every real model), single channels otherwise.
  HG_DISPATCH_ACT(
      qkv_act, dim % 2 == 0
                   ? LaunchHgrn2Gates<T, 2>(grid, qfi, pack, dim, lower_bound, q, k, g, v, stream)
                   : LaunchHgrn2Gates<T, 1>(grid, qfi, pack, dim, lower_bound, q, k, g, v, stream));
  return cudaGetLastError();
}

cudaError_t GlaGatesChunkCumsum(const void* proj, Act proj_act, int64_t proj_ld, int64_t k_off,
                                int64_t v_off, const float* gk, const float* gk_bias,
                                const PackView& pack, int heads, int kv_heads, int dk, int dv,
                                float normalizer, bool has_clamp, float clamp_min, void* q, void* k,
                                float* g, void* v, Act qkv_act, cudaStream_t stream) {
  if (pack.num_chunks == 0) return cudaSuccess;
  // A bf16 proj only with bf16 outputs (the values are copied as they are).
  if (proj_act == Act::kBF16 && qkv_act != Act::kBF16) return cudaErrorInvalidValue;
  if ((q == nullptr) != (k == nullptr)) return cudaErrorInvalidValue;
  if (q == nullptr && v == nullptr) {  // the decays alone: every row's loads in flight
    const int64_t dim = static_cast<int64_t>(heads) * dk;
    dim3 grid(pack.num_chunks, static_cast<unsigned>((dim + kHgrn2Channels - 1) / kHgrn2Channels));
    if (dk % 2 == 0) {
      GlaDecayChunkCumsumKernel<2>
          <<<grid, dim3(kHgrn2Channels / 2, kHgrn2Threads / 64), 0, stream>>>(
              gk, gk_bias, pack, heads, kv_heads, dk, normalizer, has_clamp, clamp_min, g);
    } else {
      GlaDecayChunkCumsumKernel<1><<<grid, dim3(kHgrn2Channels, kHgrn2Threads / 128), 0, stream>>>(
          gk, gk_bias, pack, heads, kv_heads, dk, normalizer, has_clamp, clamp_min, g);
    }
    return cudaGetLastError();
  }
  dim3 grid(pack.num_chunks, heads);
  auto launch = [&](auto* typed_proj, auto* typed_out) {
    using TP = std::remove_const_t<std::remove_pointer_t<decltype(typed_proj)>>;
    using T = std::remove_pointer_t<decltype(typed_out)>;
    GlaGatesChunkCumsumKernel<TP, T><<<grid, 128, 0, stream>>>(
        typed_proj, proj_ld, k_off, v_off, gk, gk_bias, pack, heads, kv_heads, dk, dv, normalizer,
        has_clamp, clamp_min, static_cast<T*>(q), static_cast<T*>(k), g, static_cast<T*>(v));
  };
  if (proj_act == Act::kBF16) {
    launch(static_cast<const bf16*>(proj), static_cast<bf16*>(nullptr));
  } else {
    HG_DISPATCH_ACT(qkv_act, launch(static_cast<const float*>(proj), static_cast<T*>(nullptr)));
  }
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
