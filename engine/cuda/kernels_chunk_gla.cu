// Chunkwise GLA (HGRN2, GLA, TNL) for prefill in fp32 (bf16 mode's tensor-core kernels are
// kernels_chunk_mma.cu; the one-step form for decode is in kernels_recurrent_step.cu): the
// chunk-local cumsum, local states, the state scan across chunks and the output.
#include <algorithm>

#include "engine/cuda/chunk_pack.cuh"
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/kernels_chunk_mma.h"

namespace hgeval::cuda {
namespace {

// Grid (chunks, H); threads over K.
__global__ void ChunkCumsumKernel(float* g, PackView pack, int heads, int dk) {
  const int c = blockIdx.x, h = blockIdx.y;
  const int t0 = ChunkRow0(pack, c);
  const int n = ChunkRows(pack, c);
  for (int k = threadIdx.x; k < dk; k += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) {
      float* p = g + (static_cast<int64_t>(t0 + j) * heads + h) * dk + k;
      acc += *p;
      *p = acc;
    }
  }
}

constexpr int kMaxDk = 256;
constexpr int kLocalVT = 64;  // value columns per block of the local-state kernel

// Phase 1, parallel over (chunk, head, value tile): the chunk's own contribution
// U_c = sum_j (k_j * exp(G_last - G_j)) v_j^T, written to u [chunks, H, K, V]. The last
// chunk's U only feeds the final state: a read-only start (the choices scored from a
// shared context) keeps none, so its last chunk is skipped (for a one-chunk choice, all
// of this phase).
// 256 threads: 16 value groups of 4 columns x 16 key-row groups.
template <int kRows>
__global__ void __launch_bounds__(256)
    ChunkLocalStateKernel(const float* k, const float* G, const float* v, PackView pack, int heads,
                          int dk, int dv, float* const* state_ptrs, float* const* out_ptrs,
                          float* u) {
  extern __shared__ float smem[];
  float* kd = smem;          // [kC][dk]
  float* vt = kd + kC * dk;  // [kC][kLocalVT]
  const int c = blockIdx.x, h = blockIdx.y, v0 = blockIdx.z * kLocalVT;
  const int seq = ChunkSeq(pack, c);
  if (c + 1 == SeqChunkEnd(pack, seq) && !KeepsFinalState(state_ptrs, out_ptrs, seq)) return;
  const int t0 = ChunkRow0(pack, c);
  const int n = ChunkRows(pack, c);
  const int tid = threadIdx.x;
  const int64_t glast_off = (static_cast<int64_t>(t0 + n - 1) * heads + h) * dk;
#pragma unroll 4
  for (int idx = tid; idx < kC * dk; idx += blockDim.x) {
    const int j = idx / dk, kk = idx - (idx / dk) * dk;
    float val = 0.0f;
    if (j < n) {
      const int64_t o = (static_cast<int64_t>(t0 + j) * heads + h) * dk + kk;
      val = k[o] * __expf(G[glast_off + kk] - G[o]);
    }
    kd[idx] = val;
  }
  for (int idx = tid; idx < kC * kLocalVT; idx += blockDim.x) {
    const int j = idx / kLocalVT, cc = idx % kLocalVT;
    vt[idx] = (j < n && v0 + cc < dv) ? v[(static_cast<int64_t>(t0 + j) * heads + h) * dv + v0 + cc]
                                      : 0.0f;
  }
  __syncthreads();
  const int tv = tid % 16, tk = tid / 16;
  float acc[kRows][4];
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
#pragma unroll
    for (int x = 0; x < 4; ++x) acc[m][x] = 0.0f;
  }
  for (int j = 0; j < n; ++j) {
    const float4 vv = *reinterpret_cast<const float4*>(vt + j * kLocalVT + tv * 4);
#pragma unroll
    for (int m = 0; m < kRows; ++m) {
      const int kk = tk + 16 * m;
      if (kk < dk) {
        const float a = kd[j * dk + kk];
        acc[m][0] = fmaf(a, vv.x, acc[m][0]);
        acc[m][1] = fmaf(a, vv.y, acc[m][1]);
        acc[m][2] = fmaf(a, vv.z, acc[m][2]);
        acc[m][3] = fmaf(a, vv.w, acc[m][3]);
      }
    }
  }
  float* uc = u + (static_cast<int64_t>(c) * heads + h) * dk * dv;
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
    const int kk = tk + 16 * m;
    if (kk < dk) {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int vc = v0 + tv * 4 + x;
        if (vc < dv) uc[static_cast<int64_t>(kk) * dv + vc] = acc[m][x];
      }
    }
  }
}

// Phase 2, sequential over a sequence's chunks but parallel over every state element
// (h, k, v) and over sequences (grid.y): S_{c+1} = exp(G_last,c) S_c + U_c. In place,
// u[c] becomes S_c (the state before chunk c). The sequence starts from its state pointer
// (or `single` for the single-sequence form; null: zero) and writes the final state to
// its out pointer (out_ptrs null: the state pointer; a null entry: nowhere). Where the
// output kernel reads the start state in place (ReadsStartInPlace) the first chunk's S is
// not copied; a sequence that keeps no final state needs no U of its last chunk (not
// computed, see above), and a one-chunk one needs nothing here.
__global__ void ChunkStateScanKernel(const float* __restrict__ G, PackView pack, int heads, int dk,
                                     int dv, float* const* state_ptrs, float* const* out_ptrs,
                                     int64_t layer_offset, float* single, float* __restrict__ u) {
  const int64_t per_chunk = static_cast<int64_t>(heads) * dk * dv;
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= per_chunk) return;
  const int seq = blockIdx.y;
  const SeqWalk walk = SeqWalkOf(pack, state_ptrs, out_ptrs, layer_offset, single, seq);
  float* const state = walk.state;
  float* const out = walk.out;
  const int64_t hk = e / dv;  // h * dk + k
  const int first = walk.first, chunks = walk.chunks, first_written = walk.first_written;
  const int with_u = walk.with_u;  // chunks whose U is used
  if (!ChunkScanHasWork(chunks, out != nullptr, first_written == 1)) return;
  const int row_end = SeqRowEnd(pack, seq);
  auto decay_of = [&](int x) {
    const int c = first + x;
    const int last = min(ChunkRow0(pack, c) + kC, row_end) - 1;
    return __expf(G[static_cast<int64_t>(last) * heads * dk + hk]);
  };
  float* us = u + static_cast<int64_t>(first) * per_chunk;
  constexpr int kAhead = 4;  // loads in flight ahead of the dependent chain
  float local[kAhead], dec[kAhead];
#pragma unroll
  for (int x = 0; x < kAhead; ++x) {
    local[x] = x < with_u ? us[x * per_chunk + e] : 0.0f;
    dec[x] = x < with_u ? decay_of(x) : 0.0f;
  }
  float s = state != nullptr ? state[e] : 0.0f;
  for (int c0 = 0; c0 < chunks; c0 += kAhead) {
#pragma unroll
    for (int x = 0; x < kAhead; ++x) {
      const int c = c0 + x;
      if (c < chunks) {
        const float cur = local[x], d = dec[x];
        if (c + kAhead < with_u) {
          local[x] = us[(c + kAhead) * per_chunk + e];
          dec[x] = decay_of(c + kAhead);
        }
        if (c >= first_written) us[c * per_chunk + e] = s;
        if (c < with_u) s = fmaf(d, s, cur);
      }
    }
  }
  if (out != nullptr) out[e] = s;
}

constexpr int kSlice = 16;     // key slice of the intra-chunk matrix
constexpr int kThreads = 256;  // ChunkOutputKernel's block size
constexpr int kSliceLoads = kC * kSlice / kThreads;
constexpr int kRowPad = kC + 4;  // transposed smem rows: [k][chunk row], 16-byte aligned

__device__ __forceinline__ float4 Ld4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ float Get(const float4& v, int i) {
  return i == 0 ? v.x : (i == 1 ? v.y : (i == 2 ? v.z : v.w));
}

// acc[r][x] += a[k][i0 + r] * b[k][j0 + x] over rows k < count of two row-major tiles
// (a's rows kRowPad apart, b's 64): the 4 x 4 register tile's rank-1 updates in order.
__device__ __forceinline__ void AccumulateRows4x4(float (&acc)[4][4], const float* a,
                                                  const float* b, int count) {
#pragma unroll 4
  for (int k = 0; k < count; ++k) {
    const float4 av = Ld4(a + k * kRowPad);
    const float4 bv = Ld4(b + k * 64);
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int x = 0; x < 4; ++x) acc[r][x] = fmaf(Get(av, r), Get(bv, x), acc[r][x]);
    }
  }
}

// Grid (chunks, H), 256 threads as a 16 x 16 grid of 4 x 4 register tiles. A sequence's
// first chunk reads its start state in place where ReadsStartInPlace (none: a zero
// state, whose term is skipped); every other chunk reads its S from chunk_states.
__global__ void __launch_bounds__(256)
    ChunkOutputKernel(const float* q, const float* k, const float* G, const float* v,
                      const float* chunk_states, float* const* state_ptrs, float* const* out_ptrs,
                      int64_t layer_offset, PackView pack, int heads, int dk, int dv, float scale,
                      float* o) {
  extern __shared__ float smem[];
  float* at = smem;               // A transposed: at[j][i], [kC][kRowPad]
  float* sq = at + kC * kRowPad;  // slices, transposed: [kSlice][kRowPad]
  float* sk = sq + kSlice * kRowPad;
  float* sg = sk + kSlice * kRowPad;
  float* qe = sg + kSlice * kRowPad;  // q * exp(G), transposed: [dk][kRowPad]
  const int c = blockIdx.x, h = blockIdx.y;
  const int t0 = ChunkRow0(pack, c);
  const int n = ChunkRows(pack, c);
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const int i0 = 4 * ty, j0 = 4 * tx;

  // Intra-chunk matrix A[i][j] = sum_k q_ik k_jk exp(G_ik - G_jk) for j <= i: exact
  // per-element exponents (never overflow where used; masked entries are selected away).
  // Only the 136 lower-triangle 4x4 tiles are computed, by threads 0..135 (whole warps
  // above that stay idle instead of diverging).
  for (int idx = tid; idx < kC * kRowPad; idx += blockDim.x) at[idx] = 0.0f;
  const bool tri = tid < 136;
  int aty = 0;
  while ((aty + 1) * (aty + 2) / 2 <= tid) ++aty;
  const int atx = tid - aty * (aty + 1) / 2;
  const int ai0 = 4 * aty, aj0 = 4 * atx;
  float a[4][4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
#pragma unroll
    for (int x = 0; x < 4; ++x) a[r][x] = 0.0f;
  }
  // Software pipeline: the next key slice is loaded into registers while this one is
  // used, so global-load latency overlaps the exponent/FMA work (the kernel is latency
  // bound: ~3 blocks per SM). Same arithmetic in the same order as without it.
  float pq[kSliceLoads], pk[kSliceLoads], pg[kSliceLoads];
  auto fetch_slice = [&](int ks) {
#pragma unroll
    for (int x = 0; x < kSliceLoads; ++x) {
      const int idx = tid + x * kThreads;
      const int row = idx / kSlice, kk = idx % kSlice;
      pq[x] = pk[x] = pg[x] = 0.0f;
      if (row < n && ks + kk < dk) {
        const int64_t off = (static_cast<int64_t>(t0 + row) * heads + h) * dk + ks + kk;
        pq[x] = q[off];
        pk[x] = k[off];
        pg[x] = G[off];
      }
    }
  };
  fetch_slice(0);
  for (int ks = 0; ks < dk; ks += kSlice) {
#pragma unroll
    for (int x = 0; x < kSliceLoads; ++x) {
      const int idx = tid + x * kThreads;
      const int row = idx / kSlice, kk = idx % kSlice;
      sq[kk * kRowPad + row] = pq[x];
      sk[kk * kRowPad + row] = pk[x];
      sg[kk * kRowPad + row] = pg[x];
    }
    __syncthreads();
    if (ks + kSlice < dk) fetch_slice(ks + kSlice);
    if (tri && ai0 < n) {  // tiles of rows past a short chunk's end: nothing to do
      const int kend = min(kSlice, dk - ks);
      for (int kk = 0; kk < kend; ++kk) {
        const float4 qi = Ld4(sq + kk * kRowPad + ai0), gi = Ld4(sg + kk * kRowPad + ai0);
        const float4 kj = Ld4(sk + kk * kRowPad + aj0), gj = Ld4(sg + kk * kRowPad + aj0);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
#pragma unroll
          for (int x = 0; x < 4; ++x) {
            a[r][x] = fmaf(Get(qi, r) * Get(kj, x), __expf(Get(gi, r) - Get(gj, x)), a[r][x]);
          }
        }
      }
    }
    __syncthreads();
  }
  if (tri) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int i = ai0 + r, j = aj0 + x;
        at[j * kRowPad + i] = (j <= i && i < n) ? a[r][x] : 0.0f;
      }
    }
  }
#pragma unroll 8
  for (int idx = tid; idx < kC * dk; idx += blockDim.x) {
    const int row = idx / dk, kk = idx % dk;
    float val = 0.0f;
    if (row < n) {
      const int64_t off = (static_cast<int64_t>(t0 + row) * heads + h) * dk + kk;
      val = q[off] * __expf(G[off]);
    }
    qe[kk * kRowPad + row] = val;
  }
  __syncthreads();

  const float* S = chunk_states + (static_cast<int64_t>(c) * heads + h) * dk * dv;
  if (IsFirstChunk(pack, c) && ReadsStartInPlace(state_ptrs, out_ptrs, ChunkSeq(pack, c))) {
    const float* start = state_ptrs[ChunkSeq(pack, c)];
    S = start == nullptr ? nullptr : start + layer_offset + static_cast<int64_t>(h) * dk * dv;
  }
  const float* vbase = v + (static_cast<int64_t>(t0) * heads + h) * dv;
  // Staging area for 32 rows x 64 columns of S or v (reuses the slice buffers, dead now):
  // every global read is a coalesced block load, every inner-loop read an LDS.128.
  // Per 64 value columns: the S stages (rows of S), then the v stages (chunk rows);
  // stage st+1 is fetched into registers while stage st is used (software pipeline).
  float* stage = sq;
  constexpr int kStageRows = 32;
  constexpr int kStageLoads = kStageRows * 64 / kThreads;
  const int s_stages = S == nullptr ? 0 : CeilDiv(dk, kStageRows);
  const int v_stages = CeilDiv(n, kStageRows);
  const int per_block = s_stages + v_stages;
  const int total = CeilDiv(dv, 64) * per_block;
  float pre[kStageLoads];
  auto fetch_stage = [&](int st) {
    const int vb = (st / per_block) * 64, sidx = st % per_block;
    const bool is_s = sidx < s_stages;
    const float* base = is_s ? S : vbase;
    const int64_t row_stride = is_s ? static_cast<int64_t>(dv) : static_cast<int64_t>(heads) * dv;
    const int row0 = (is_s ? sidx : sidx - s_stages) * kStageRows;
    const int nrows = is_s ? dk : n;
#pragma unroll
    for (int x = 0; x < kStageLoads; ++x) {
      const int idx = tid + x * kThreads;
      const int r = idx / 64, cc = idx % 64;
      pre[x] = (row0 + r < nrows && vb + cc < dv) ? base[(row0 + r) * row_stride + vb + cc] : 0.0f;
    }
  };
  const int jend = min(n, i0 + 4);  // rows i0..i0+3 only see j <= i
  float acc[4][4];
  fetch_stage(0);
  for (int st = 0; st < total; ++st) {
    const int vb = (st / per_block) * 64, sidx = st % per_block;
    if (sidx == 0) {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
#pragma unroll
        for (int x = 0; x < 4; ++x) acc[r][x] = 0.0f;
      }
    }
    __syncthreads();  // the previous stage's readers are done
#pragma unroll
    for (int x = 0; x < kStageLoads; ++x) stage[tid + x * kThreads] = pre[x];
    __syncthreads();
    if (st + 1 < total) fetch_stage(st + 1);
    if (i0 >= n) {
      // Rows past a short chunk's end (short sequences): no output to compute.
    } else if (sidx < s_stages) {
      const int kb = sidx * kStageRows;
      AccumulateRows4x4(acc, qe + kb * kRowPad + i0, stage + j0, min(kStageRows, dk - kb));
    } else {
      const int jb = (sidx - s_stages) * kStageRows;
      AccumulateRows4x4(acc, at + jb * kRowPad + i0, stage + j0, min(kStageRows, jend - jb));
    }
    if (sidx == per_block - 1) {
      const int v0 = vb + j0;
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = i0 + r;
        if (i >= n) continue;
        float* orow = o + (static_cast<int64_t>(t0 + i) * heads + h) * dv + v0;
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          if (v0 + x < dv) orow[x] = scale * acc[r][x];
        }
      }
    }
  }
}

size_t LocalStateSmem(int dk) { return sizeof(float) * (kC * dk + kC * kLocalVT); }
size_t OutputSmem(int dk) { return sizeof(float) * kRowPad * (kC + 3 * kSlice + dk); }

}  // namespace

cudaError_t ChunkLocalCumsumPacked(float* g, const PackView& pack, int heads, int dk,
                                   cudaStream_t stream) {
  if (pack.num_chunks == 0) return cudaSuccess;
  dim3 grid(pack.num_chunks, heads);
  const int threads = dk < 256 ? ((dk + 31) / 32) * 32 : 256;
  ChunkCumsumKernel<<<grid, threads, 0, stream>>>(g, pack, heads, dk);
  return cudaGetLastError();
}

cudaError_t ChunkStateScan(const float* G, const PackView& pack, int heads, int dk, int dv,
                           float* const* state_ptrs, float* const* out_ptrs, int64_t layer_offset,
                           float* single, float* chunk_states, cudaStream_t stream) {
  const int64_t elems = static_cast<int64_t>(heads) * dk * dv;
  if (StateSeqs(pack) == 0) return cudaSuccess;
  dim3 scan_grid(CeilDiv(elems, 256), StateSeqs(pack));
  ChunkStateScanKernel<<<scan_grid, 256, 0, stream>>>(G, pack, heads, dk, dv, state_ptrs, out_ptrs,
                                                      layer_offset, single, chunk_states);
  return cudaGetLastError();
}

namespace {
cudaError_t LaunchChunkStates(const float* k, const float* G, const float* v, const PackView& pack,
                              int heads, int dk, int dv, float* const* state_ptrs,
                              float* const* out_ptrs, int64_t layer_offset, float* single,
                              float* chunk_states, cudaStream_t stream) {
  if (StateChunks(pack) == 0) return cudaSuccess;
  if (dk > kMaxDk) return cudaErrorInvalidValue;
  const size_t smem = LocalStateSmem(dk);
  dim3 grid(StateChunks(pack), heads, CeilDiv(dv, kLocalVT));
  // Key rows per thread (dk / 16, rounded up to a power of two) fixed at compile time.
  auto launch = [&](auto kernel) -> cudaError_t {
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem));
    if (e != cudaSuccess) return e;
    kernel<<<grid, 256, smem, stream>>>(k, G, v, pack, heads, dk, dv, state_ptrs, out_ptrs,
                                        chunk_states);
    return cudaGetLastError();
  };
  cudaError_t err;
  if (dk <= 16) {
    err = launch(ChunkLocalStateKernel<1>);
  } else if (dk <= 32) {
    err = launch(ChunkLocalStateKernel<2>);
  } else if (dk <= 64) {
    err = launch(ChunkLocalStateKernel<4>);
  } else if (dk <= 128) {
    err = launch(ChunkLocalStateKernel<8>);
  } else {
    err = launch(ChunkLocalStateKernel<16>);
  }
  if (err != cudaSuccess) return err;
  return ChunkStateScan(G, pack, heads, dk, dv, state_ptrs, out_ptrs, layer_offset, single,
                        chunk_states, stream);
}

}  // namespace

cudaError_t ChunkGlaStatesPacked(const float* k, const float* G, const float* v,
                                 const PackView& pack, int heads, int dk, int dv,
                                 float* const* state_ptrs, float* const* out_ptrs,
                                 int64_t layer_offset, float* chunk_states, cudaStream_t stream) {
  return LaunchChunkStates(k, G, v, pack, heads, dk, dv, state_ptrs, out_ptrs, layer_offset,
                           nullptr, chunk_states, stream);
}

cudaError_t ChunkGlaOutputPacked(const float* q, const float* k, const float* G, const float* v,
                                 const float* chunk_states, float* const* state_ptrs,
                                 float* const* out_ptrs, int64_t layer_offset, const PackView& pack,
                                 int heads, int dk, int dv, float scale, float* o,
                                 cudaStream_t stream) {
  if (pack.num_chunks == 0) return cudaSuccess;
  if (dk > kMaxDk) return cudaErrorInvalidValue;
  const size_t smem = OutputSmem(dk);
  cudaError_t err = cudaFuncSetAttribute(
      ChunkOutputKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  dim3 grid(pack.num_chunks, heads);
  ChunkOutputKernel<<<grid, 256, smem, stream>>>(q, k, G, v, chunk_states, state_ptrs, out_ptrs,
                                                 layer_offset, pack, heads, dk, dv, scale, o);
  return cudaGetLastError();
}

cudaError_t ChunkLocalCumsum(float* g, int tokens, int heads, int dk, cudaStream_t stream) {
  return ChunkLocalCumsumPacked(g, SingleSequence(tokens), heads, dk, stream);
}

cudaError_t ChunkGlaStates(const float* k, const float* G, const float* v, int tokens, int heads,
                           int dk, int dv, float* state, float* chunk_states, cudaStream_t stream) {
  return LaunchChunkStates(k, G, v, SingleSequence(tokens), heads, dk, dv, nullptr, nullptr, 0,
                           state, chunk_states, stream);
}

cudaError_t ChunkGlaOutput(const float* q, const float* k, const float* G, const float* v,
                           const float* chunk_states, int tokens, int heads, int dk, int dv,
                           float scale, float* o, cudaStream_t stream) {
  return ChunkGlaOutputPacked(q, k, G, v, chunk_states, nullptr, nullptr, 0, SingleSequence(tokens),
                              heads, dk, dv, scale, o, stream);
}

}  // namespace hgeval::cuda
