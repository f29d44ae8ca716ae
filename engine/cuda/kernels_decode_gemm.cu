// The decode step's skinny bf16 GEMM (kernels_decode_gemm.h, decode_gemm.h). A block owns
// kTiles * 16 rows of W and all (up to 32) rows of A; its kSplit warps split K into 32-wide
// chunks, warp w taking chunks w, w + kSplit, ..., each accumulating with mma.m16n8k16 (W
// rows as the mma's M, A rows as its N). A lane loads 16 contiguous bytes of a W row and of
// an A row at the same K offset and both feed the same mma k-slots, so the loads are
// vectorized and the k-slot of every K index is fixed. The warps' partial sums are then
// added in warp order through shared memory. The order of every output element's sum is
// thus a function of K alone: no M, no row position, no other row's value enters it.
// Two forms compute exactly that: DecodeGemmKernel, whose lanes load W into registers,
// and DecodeGemmStreamKernel (the default), whose producer warp streams W through the
// bulk-copy engine into shared memory.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "engine/cuda/current_device.cuh"
#include "engine/cuda/env_switch.h"
#include "engine/cuda/kernels_decode_gemm.h"
#include "engine/cuda/mbarrier.cuh"
#include "engine/cuda/mma.cuh"
#include "engine/cuda/programmatic_launch.cuh"

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

// Chunks a warp loads before it multiplies any: all of their W and A loads are in
// flight at once (the latency of HBM needs ~32 KiB per SM), within a register budget of
// 16 x 16 bytes per lane for the loaded data.
__host__ __device__ constexpr int Depth(int tiles, int ntiles) {
  const int d = 16 / (2 * tiles + ntiles);
  return d < 1 ? 1 : (d > 4 ? 4 : d);
}

// A 16-row W tile's outputs: item = (8-row A tile, mma element, lane), one a thread
// (kItems <= kThreads). This thread's output, or nullptr where it has none.
template <int kItems, typename OutT>
__device__ __forceinline__ OutT* TileOutput(int row0, int m, int n, OutT* c, int64_t ldc) {
  static_assert(kItems <= kThreads, "one output a thread");
  const int item = threadIdx.x;
  if (item >= kItems) return nullptr;
  const int l = item % 32, e = (item / 32) % 4, j = item / 128;
  const int row = row0 + l / 4 + (e >= 2 ? 8 : 0);
  const int col = j * 8 + (l % 4) * 2 + (e & 1);
  return row < n && col < m ? c + static_cast<int64_t>(col) * ldc + row : nullptr;
}

// This thread's output from the warps' partials (`part`: [kSplit][kItems]), summed in warp
// order from 0; with `accumulate` (fp32 C) added to `prior`, the value C held, as
// AddRmsNorm adds a delta to h.
template <int kItems, typename OutT>
__device__ __forceinline__ void StoreTileSum(const float* part, OutT* out, bool accumulate,
                                             float prior) {
  if (out == nullptr) return;
  float s = 0.0f;
#pragma unroll
  for (int sw = 0; sw < kSplit; ++sw) s += part[sw * kItems + threadIdx.x];
  if constexpr (sizeof(OutT) == 4) {
    *out = accumulate ? prior + s : s;
  } else {
    *out = __float2bfloat16(s);
  }
}

// The value C holds at `out` where the product is added to it (0.0f where not).
template <typename OutT>
__device__ __forceinline__ float PriorOutput(const OutT* out, bool accumulate) {
  if constexpr (sizeof(OutT) == 4) {
    if (accumulate && out != nullptr) return *out;
  }
  return 0.0f;
}

// kTiles 16-row tiles of W per block; kNT 8-row tiles of A (M rounded up to 8 only: no
// mma and no load for a tile of padding rows).
template <int kTiles, int kNT, typename OutT>
__global__ void __launch_bounds__(kThreads, 1)
    DecodeGemmKernel(int m, int n, int k, const __nv_bfloat16* __restrict__ a, int64_t lda,
                     const __nv_bfloat16* __restrict__ w, int64_t ldw, OutT* __restrict__ c,
                     int64_t ldc, bool accumulate) {
  constexpr int kDepth = Depth(kTiles, kNT);
  constexpr int kItems = kNT * 4 * 32;  // one 16-row tile's outputs: (n-tile, element, lane)
  __shared__ float partial[kSplit * kItems];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int row0 = blockIdx.x * kTiles * 16;

  float acc[kTiles][kNT][4];
#pragma unroll
  for (int i = 0; i < kTiles; ++i)
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Row pointers and predicates once: a lane's W rows and A rows are fixed.
  const __nv_bfloat16* wrow[kTiles][2];
  bool win[kTiles][2];
#pragma unroll
  for (int i = 0; i < kTiles; ++i) {
    const int r = row0 + i * 16 + g;
    win[i][0] = r < n;
    win[i][1] = r + 8 < n;
    wrow[i][0] = w + static_cast<int64_t>(win[i][0] ? r : 0) * ldw + t * 8;
    wrow[i][1] = w + static_cast<int64_t>(win[i][1] ? r + 8 : 0) * ldw + t * 8;
  }
  const __nv_bfloat16* arow[kNT];
  bool ain[kNT];
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int r = j * 8 + g;
    ain[j] = r < m;
    arow[j] = a + static_cast<int64_t>(ain[j] ? r : 0) * lda + t * 8;
  }

  const uint4 zero = make_uint4(0, 0, 0, 0);
  const int chunks = (k + kChunk - 1) / kChunk;
  uint4 wlo[kDepth][kTiles], whi[kDepth][kTiles];
  // W's loads of the kDepth chunks from ch0 on (a lane's 8 K indices are all in or all out:
  // K % 8 == 0).
  auto load_w = [&](int ch0) {
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int kk = (ch0 + d * kSplit) * kChunk;
      const bool kin = kk + t * 8 < k;
#pragma unroll
      for (int i = 0; i < kTiles; ++i) {
        wlo[d][i] = (kin && win[i][0]) ? LoadStream(wrow[i][0] + kk) : zero;
        whi[d][i] = (kin && win[i][1]) ? LoadStream(wrow[i][1] + kk) : zero;
      }
    }
  };
  // The first W loads before the wait: no kernel writes W, and under programmatic launch
  // they stream while the kernel before this one finishes (programmatic_launch.cuh). A, and
  // C, belong to the step's other kernels: only after it.
  LetDependentsLaunch();
  load_w(warp);
  WaitForPrerequisites();
  // Warp w takes chunks w, w + kSplit, ... in ascending order, kDepth at a time.
  for (int ch0 = warp; ch0 < chunks; ch0 += kDepth * kSplit) {
    if (ch0 != warp) load_w(ch0);
    uint4 x[kDepth][kNT];
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      const int kk = (ch0 + d * kSplit) * kChunk;
      const bool kin = kk + t * 8 < k;
#pragma unroll
      for (int j = 0; j < kNT; ++j) {
        x[d][j] = (kin && ain[j]) ? *reinterpret_cast<const uint4*>(arow[j] + kk) : zero;
      }
    }
#pragma unroll
    for (int d = 0; d < kDepth; ++d) {
      if (ch0 + d * kSplit >= chunks) break;  // warp-uniform: past K, no mma at all
#pragma unroll
      for (int i = 0; i < kTiles; ++i) {
        const uint32_t lo[4] = {wlo[d][i].x, whi[d][i].x, wlo[d][i].y, whi[d][i].y};
        const uint32_t hi[4] = {wlo[d][i].z, whi[d][i].z, wlo[d][i].w, whi[d][i].w};
#pragma unroll
        for (int j = 0; j < kNT; ++j) {
          Mma(acc[i][j], lo, x[d][j].x, x[d][j].y);
          Mma(acc[i][j], hi, x[d][j].z, x[d][j].w);
        }
      }
    }
  }

  // One 16-row tile at a time through shared memory: each output summed over the warps in
  // warp order, starting from 0.
#pragma unroll
  for (int i = 0; i < kTiles; ++i) {
    if (i > 0) __syncthreads();
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) partial[warp * kItems + (j * 4 + e) * 32 + lane] = acc[i][j][e];
    __syncthreads();
    OutT* out = TileOutput<kItems>(row0 + i * 16, m, n, c, ldc);
    StoreTileSum<kItems>(partial, out, accumulate, PriorOutput(out, accumulate));
  }
}

// ---- The streaming form (the default; HGEVAL_DECODE_GEMM_FORM=stream) ----
// The same products in the same order as DecodeGemmKernel, so the same bits: warp w
// multiplies chunks w, w + kSplit, ... in ascending order with the same k-slots, and the
// warps' partials are summed in warp order. What differs is how W arrives. A persistent
// block a multiprocessor walks 16-row tiles (blockIdx.x, + gridDim.x, ...); its stages,
// 16 rows x kStageK each, stream through the bulk-copy engine (one copy of up to 4 KiB a
// row) into a ring, so the next tile's W is in flight while this one's partials are
// summed; under programmatic launch the first stages load while the kernel before this
// one runs. Fewer, larger copies pace the stream faster than one of 1 KiB a row and 512 K
// (docs/cuda.md, performance log entries 42 and 51). Warp 0 issues the copies between its
// own stages rather than a 17th warp: a block of 16 warps, 4 to each of the SM's register
// quarters, may hold 128 registers a thread, where 17 warps hold 96 and A's cache at 32
// rows spilled (entry 52).
constexpr int kSlabK = kSplit * kChunk;       // one chunk a warp
constexpr int kStageK = 4 * kSlabK;           // K a stage: four chunks a warp
constexpr int kRowStride = kStageK * 2 + 64;  // a row's 4 KiB, then 16 banks' shift
constexpr int kStageBytes = 16 * kRowStride;  // one tile's 16 rows
// A tile's outputs for kNT 8-row tiles of A: (A tile, element, lane).
__host__ __device__ constexpr int StreamItems(int ntiles) { return ntiles * 4 * 32; }
// Stages in the ring: 3, or 2 at M > 8 where the partials take more room.
__host__ __device__ constexpr int StreamStages(int ntiles) { return ntiles == 1 ? 3 : 2; }
__host__ __device__ constexpr size_t StreamSmem(int ntiles) {
  return static_cast<size_t>(StreamStages(ntiles)) * kStageBytes +
         2 * kSplit * StreamItems(ntiles) * sizeof(float) +
         2 * StreamStages(ntiles) * sizeof(uint64_t);
}

// kCacheA: K <= kStageK, and A's values stay in registers for every tile (below).
template <int kNT, bool kCacheA, typename OutT>
__global__ void __launch_bounds__(kThreads, 1)
    DecodeGemmStreamKernel(int m, int n, int k, const __nv_bfloat16* __restrict__ a, int64_t lda,
                           const __nv_bfloat16* __restrict__ w, int64_t ldw, OutT* __restrict__ c,
                           int64_t ldc, bool accumulate, int ahead) {
  constexpr int kStages = StreamStages(kNT);
  constexpr int kSubs = kStageK / kSlabK;  // a warp's chunks a stage
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* stages = smem;
  float* partial = reinterpret_cast<float*>(smem + kStages * kStageBytes);  // 2 buffers
  uint64_t* full = reinterpret_cast<uint64_t*>(partial + 2 * kSplit * StreamItems(kNT));
  uint64_t* empty = full + kStages;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tiles = (n + 15) / 16;
  const int my_tiles = (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x;
  const int tile_stages = (k + kStageK - 1) / kStageK;
  const int my_stages = my_tiles * tile_stages;  // this block's, in (tile, K) order
  if (threadIdx.x == 0) {
    for (int st = 0; st < kStages; ++st) {
      MbarInit(&full[st], 1);        // the issuing arrival, plus the copies' bytes
      MbarInit(&empty[st], kSplit);  // a warp's lane 0 each
    }
  }
  __syncthreads();
  LetDependentsLaunch();

  // Warp 0 issues stage s into slot s % kStages once every warp is done with stage
  // s - kStages there (a fresh barrier's phase "before the first" counts as done), and
  // keeps `ahead` (<= kStages) stages in flight.
  auto issue = [&](int s) {
    const int slot = s % kStages;
    MbarWait(&empty[slot], ((s / kStages) & 1) ^ 1);
    const int tile = blockIdx.x + (s / tile_stages) * gridDim.x;
    const int k0 = (s % tile_stages) * kStageK;
    const int row0 = tile * 16, rows = min(16, n - row0);
    const uint32_t row_bytes = min(kStageK, k - k0) * 2;
    if (lane == 0) MbarArriveExpectTx(&full[slot], rows * row_bytes);
    __syncwarp();
    if (lane < rows) {
      BulkCopyToShared(stages + slot * kStageBytes + lane * kRowStride,
                       w + static_cast<int64_t>(row0 + lane) * ldw + k0, row_bytes, &full[slot]);
    }
  };
  // W, which no kernel writes, need not wait for the kernels before this one
  // (programmatic_launch.cuh); A does.
  if (warp == 0) {
    for (int s = 0; s < min(ahead, my_stages); ++s) issue(s);
  }
  WaitForPrerequisites();

  const int g = lane / 4, t = lane % 4;
  const int chunks = (k + kChunk - 1) / kChunk;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  constexpr int kItems = StreamItems(kNT);
  bool a_in[kNT];
  const __nv_bfloat16* arow[kNT];
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    a_in[j] = j * 8 + g < m;
    arow[j] = a + static_cast<int64_t>(a_in[j] ? j * 8 + g : 0) * lda + t * 8;
  }
  // This lane's 16 bytes of chunk ch in each 8-row tile of A.
  auto load_a = [&](int ch, uint4(&x)[kNT]) {
    const int kk = ch * kChunk;
    const bool kin = kk + t * 8 < k;
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      x[j] = kin && a_in[j] ? *reinterpret_cast<const uint4*>(arow[j] + kk) : zero;
    }
  };
  int buf = 0, tile = blockIdx.x;
  float acc[kNT][4];
  // Chunk ch's products: W's 16 rows from the stage at `at` (this chunk's first K, for
  // lane t), A's values `x`.
  auto multiply = [&](const unsigned char* at, int ch, const uint4(&x)[kNT]) {
    const int row0 = tile * 16;
    const bool kin = ch * kChunk + t * 8 < k;
    const uint4 wlo =
        kin && row0 + g < n ? *reinterpret_cast<const uint4*>(at + g * kRowStride) : zero;
    const uint4 whi =
        kin && row0 + g + 8 < n ? *reinterpret_cast<const uint4*>(at + (g + 8) * kRowStride) : zero;
    const uint32_t lo[4] = {wlo.x, whi.x, wlo.y, whi.y};
    const uint32_t hi[4] = {wlo.z, whi.z, wlo.w, whi.w};
#pragma unroll
    for (int j = 0; j < kNT; ++j) {
      Mma(acc[j], lo, x[j].x, x[j].y);
      Mma(acc[j], hi, x[j].z, x[j].w);
    }
  };
  // A tile's outputs, each summed over the warps in warp order, from 0. Two buffers: a
  // tile's sums are read before any warp passes the next tile's barrier.
  auto finish_tile = [&](OutT* out, float prior) {
    float* part = partial + buf * kSplit * kItems;
#pragma unroll
    for (int j = 0; j < kNT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) part[warp * kItems + (j * 4 + e) * 32 + lane] = acc[j][e];
    __syncthreads();
    StoreTileSum<kItems>(part, out, accumulate, prior);
    buf ^= 1;
    tile += gridDim.x;
  };

  // A's values for a stage's kSubs chunks of this warp: loaded once where K fits one stage
  // (no L2 read of A a tile, which at 32 rows is twice W's bytes), else a stage at a time,
  // in flight while the stage lands.
  uint4 x[kSubs][kNT];
  if constexpr (kCacheA) {
#pragma unroll
    for (int q = 0; q < kSubs; ++q) load_a(q * kSplit + warp, x[q]);
  }
  int s = 0;  // this block's stage
  for (int i = 0; i < my_tiles; ++i) {
    // What C holds where the product is added, loaded as the tile starts: its latency
    // passes under the tile's stages instead of after them.
    OutT* out = TileOutput<kItems>(tile * 16, m, n, c, ldc);
    const float prior = PriorOutput(out, accumulate);
#pragma unroll
    for (int j = 0; j < kNT; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
    for (int k0 = 0; k0 < k; k0 += kStageK, ++s) {
      const int slot = s % kStages;
      const int ch0 = k0 / kChunk + warp;  // this warp's first chunk in the stage
      if constexpr (!kCacheA) {
#pragma unroll
        for (int q = 0; q < kSubs; ++q) load_a(ch0 + q * kSplit, x[q]);
      }
      MbarWait(&full[slot], (s / kStages) & 1);
#pragma unroll
      for (int q = 0; q < kSubs; ++q) {
        const int ch = ch0 + q * kSplit;
        if (ch >= chunks) break;  // warp-uniform: past K, no mma at all
        multiply(stages + slot * kStageBytes + (ch * kChunk - k0) * 2 + t * 16, ch, x[q]);
      }
      __syncwarp();
      if (lane == 0) MbarArrive(&empty[slot]);
      if (warp == 0 && s + ahead < my_stages) issue(s + ahead);
    }
    finish_tile(out, prior);
  }
}

// Stages a block keeps in flight: its whole ring, but one fewer where the ring would hold
// all a block streams (q|f|i's and down's 3 stages at 1 to 8 rows): every block's W
// requested at once arrives late for each block's first stage, and the products and sums
// then follow the stream instead of running under it (performance log entry 53: at M = 1
// q|f|i 8.7 -> 7.8 us, down 8.1 -> 7.8, where gate|up and the head, 6 and 16 stages a
// block, lose 3 % and 2 % with one fewer). HGEVAL_DECODE_GEMM_AHEAD=1|2|3 fixes it (capped
// at the ring), for measurement; the bits do not depend on it.
int StagesAhead(int stages, int n, int k, int blocks) {
  static const int fixed = EnvChoice("HGEVAL_DECODE_GEMM_AHEAD", {1, 2, 3});
  if (fixed > 0) return std::min(fixed, stages);
  const int tiles = (n + 15) / 16;
  const int busiest = (tiles + blocks - 1) / blocks * ((k + kStageK - 1) / kStageK);
  return busiest <= stages ? std::max(1, stages - 1) : stages;
}

// The current device's (a process may drive several GPUs).
int MultiprocessorCount() {
  return std::max(1, CurrentDeviceAttribute(cudaDevAttrMultiProcessorCount).value_or(1));
}

// f(std::integral_constant<int, kNT>) for m's 8-row tiles of A (at least one).
template <typename F>
cudaError_t ByRowTiles(int m, F&& f) {
  switch ((m + 7) / 8) {
    case 0:
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    default:
      return f(std::integral_constant<int, 4>{});
  }
}

// Opts the kernel in to its dynamic shared memory once, then launches it.
template <int kNT, bool kCacheA, typename OutT>
cudaError_t LaunchStreamKernel(cudaStream_t stream, int m, int n, int k, const __nv_bfloat16* a,
                               int64_t lda, const __nv_bfloat16* w, int64_t ldw, OutT* c,
                               int64_t ldc, bool accumulate) {
  auto* kernel = DecodeGemmStreamKernel<kNT, kCacheA, OutT>;
  constexpr size_t kSmem = StreamSmem(kNT);
  static_assert(kSmem <= 227 * 1024, "a Hopper block's shared memory");
  static const cudaError_t attr = cudaFuncSetAttribute(
      kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmem));
  if (attr != cudaSuccess) return attr;
  const int blocks = std::min((n + 15) / 16, MultiprocessorCount());
  return LaunchMaybeProgrammatic(kernel, blocks, kThreads, kSmem, stream, m, n, k, a, lda, w, ldw,
                                 c, ldc, accumulate, StagesAhead(StreamStages(kNT), n, k, blocks));
}

template <typename OutT>
cudaError_t LaunchStream(cudaStream_t stream, int m, int n, int k, const __nv_bfloat16* a,
                         int64_t lda, const __nv_bfloat16* w, int64_t ldw, OutT* c, int64_t ldc,
                         bool accumulate) {
  // HGEVAL_DECODE_GEMM_CACHE_A=0 loads A a stage at any K, for measurement (the same bits).
  static const bool cache_a = !EnvIs("HGEVAL_DECODE_GEMM_CACHE_A", "0");
  const bool cached = cache_a && k <= kStageK;
  return ByRowTiles(m, [&](auto row_tiles) {
    constexpr int kNT = decltype(row_tiles)::value;
    return cached
               ? LaunchStreamKernel<kNT, true>(stream, m, n, k, a, lda, w, ldw, c, ldc, accumulate)
               : LaunchStreamKernel<kNT, false>(stream, m, n, k, a, lda, w, ldw, c, ldc,
                                                accumulate);
  });
}

// HGEVAL_DECODE_GEMM_TILES=1|2|4 fixes the block form's W rows per block (16 each) for
// measurement; results are bitwise the same for any value (the K split does not change).
int TilesOverride() {
  static const int tiles = EnvChoice("HGEVAL_DECODE_GEMM_TILES", {1, 2, 4});
  return tiles;
}

template <int kTiles, typename OutT>
cudaError_t LaunchBlockTiles(cudaStream_t stream, int m, int n, int k, const __nv_bfloat16* a,
                             int64_t lda, const __nv_bfloat16* w, int64_t ldw, OutT* c, int64_t ldc,
                             bool accumulate) {
  return ByRowTiles(m, [&](auto row_tiles) {
    auto* kernel = DecodeGemmKernel<kTiles, decltype(row_tiles)::value, OutT>;
    const int blocks = (n + kTiles * 16 - 1) / (kTiles * 16);
    return LaunchMaybeProgrammatic(kernel, blocks, kThreads, 0, stream, m, n, k, a, lda, w, ldw, c,
                                   ldc, accumulate);
  });
}

template <typename OutT>
cudaError_t LaunchBlock(cudaStream_t stream, int m, int n, int k, const __nv_bfloat16* a,
                        int64_t lda, const __nv_bfloat16* w, int64_t ldw, OutT* c, int64_t ldc,
                        bool accumulate) {
  // Rows of W per block: enough blocks to fill the GPU twice over, else fewer A re-reads.
  int tiles = TilesOverride();
  if (tiles == 0) tiles = n >= 4 * 16 * 264 ? 4 : (n >= 2 * 16 * 264 ? 2 : 1);
  if (tiles == 4) return LaunchBlockTiles<4>(stream, m, n, k, a, lda, w, ldw, c, ldc, accumulate);
  if (tiles == 2) return LaunchBlockTiles<2>(stream, m, n, k, a, lda, w, ldw, c, ldc, accumulate);
  return LaunchBlockTiles<1>(stream, m, n, k, a, lda, w, ldw, c, ldc, accumulate);
}

template <typename OutT>
cudaError_t Dispatch(DecodeGemmForm form, cudaStream_t stream, int m, int n, int k,
                     const __nv_bfloat16* a, int64_t lda, const __nv_bfloat16* w, int64_t ldw,
                     OutT* c, int64_t ldc, bool accumulate) {
  return form == DecodeGemmForm::kStream
             ? LaunchStream(stream, m, n, k, a, lda, w, ldw, c, ldc, accumulate)
             : LaunchBlock(stream, m, n, k, a, lda, w, ldw, c, ldc, accumulate);
}

// HGEVAL_DECODE_GEMM_FORM=block picks the first form (the same bits); read once.
DecodeGemmForm FormFromEnv() {
  static const DecodeGemmForm form =
      EnvIs("HGEVAL_DECODE_GEMM_FORM", "block") ? DecodeGemmForm::kBlock : DecodeGemmForm::kStream;
  return form;
}

}  // namespace

cudaError_t LaunchDecodeGemmForm(DecodeGemmForm form, cudaStream_t stream, int m, int n, int k,
                                 const void* a, int64_t lda, const void* w, int64_t ldw, void* c,
                                 bool c_f32, int64_t ldc, bool accumulate) {
  if (accumulate && !c_f32) return cudaErrorInvalidValue;
  const auto* ap = static_cast<const __nv_bfloat16*>(a);
  const auto* wp = static_cast<const __nv_bfloat16*>(w);
  return c_f32 ? Dispatch(form, stream, m, n, k, ap, lda, wp, ldw, static_cast<float*>(c), ldc,
                          accumulate)
               : Dispatch(form, stream, m, n, k, ap, lda, wp, ldw, static_cast<__nv_bfloat16*>(c),
                          ldc, accumulate);
}

cudaError_t LaunchDecodeGemm(cudaStream_t stream, int m, int n, int k, const void* a, int64_t lda,
                             const void* w, int64_t ldw, void* c, bool c_f32, int64_t ldc,
                             bool accumulate) {
  return LaunchDecodeGemmForm(FormFromEnv(), stream, m, n, k, a, lda, w, ldw, c, c_f32, ldc,
                              accumulate);
}

}  // namespace hgeval::cuda
