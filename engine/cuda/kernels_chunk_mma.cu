// Chunkwise GLA (HGRN2, GLA, TNL) on tensor cores for bf16 mode: bf16 mma.sync m16n8k16
// with fp32 accumulation (the design of fla's chunk_gla). G (chunk-local cumsum of the log
// decay, nonincreasing within a chunk) is fp32; q, k and v are fp32 or bf16 (T): a bf16
// operand is widened to fp32 exactly, so bf16 q, k, v give the bits fp32 ones holding the
// same values give. v is staged as bf16 either way; q and k are scaled by their decays in
// fp32, and the products rounded to bf16 only in shared memory or registers. Decay
// factors are split so that no exponent overflows: the state terms use exp(G_last - G_j)
// and exp(G_i); the intra-chunk matrix below a 16-token diagonal block uses q_i exp(G_i - G_f) and
// k_j exp(G_f - G_j) with G_f the block's first row. Its diagonal blocks take the same
// split in fp32 (q_i exp(G_i - G_f) . k_j exp(G_f - G_j)) where every G of the key slice
// lies within kFactorSpan of its block's first row, else the exact per-element exponent
// exp(G_i - G_j), as the fp32 kernels do.
#include <cstdint>
#include <type_traits>

#include "engine/cuda/chunk_pack.cuh"
#include "engine/cuda/gate_maths.cuh"
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/kernels_chunk_mma.h"
#include "engine/cuda/mma.cuh"

namespace hgeval::cuda {
namespace {

constexpr int kSub = 16;      // rows of a diagonal block (one warp's output rows)
constexpr int kVT = 64;       // value columns per tile
constexpr int kKS = 32;       // key columns per slice of the output kernel
constexpr int kSP = kKS + 8;  // fp32 row stride of the slices: float2 reads conflict-free
constexpr int kVS = kVT + 8;  // bf16 row stride of value tiles: ldmatrix rows conflict-free
constexpr int kMaxDk = 256;
constexpr int kOutThreads = 4 * 32;  // one warp per 16 rows of the chunk
// The output kernel factors a diagonal block's e^{G_i - G_j} (FactorSlice) while every G
// lies within this of its 16-row block's first row: e^40 ≈ 2e17 keeps the factors finite
// and normal.
constexpr float kFactorSpan = 40.0f;

__host__ __device__ constexpr int RoundUp(int x, int m) { return (x + m - 1) / m * m; }

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<uint32_t*>(&p);
}
__device__ __forceinline__ uint32_t Ld32(const bf16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}
__device__ __forceinline__ float2 Ld2(const float* p) {
  return *reinterpret_cast<const float2*>(p);
}
__device__ __forceinline__ float4 Ld4(const float* p) {
  return *reinterpret_cast<const float4*>(p);
}
// Four bf16 (8 bytes) widened to fp32: exact.
__device__ __forceinline__ float4 Widen4(uint2 raw) {
  const float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.x));
  const float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&raw.y));
  return make_float4(lo.x, lo.y, hi.x, hi.y);
}
__device__ __forceinline__ float4 Widen4(float4 raw) { return raw; }
// Four operand values as they are stored (fp32: a float4; bf16: 8 bytes), and widened.
template <typename T>
using Raw4 = std::conditional_t<std::is_same_v<T, float>, float4, uint2>;
template <typename T>
__device__ __forceinline__ Raw4<T> LdRaw4(const T* p) {
  return *reinterpret_cast<const Raw4<T>*>(p);
}
template <typename T>
__device__ __forceinline__ float4 Ld4f(const T* p) {
  return Widen4(LdRaw4(p));
}
__device__ __forceinline__ float4 Splat4(float x) { return make_float4(x, x, x, x); }
// Four raw bf16 projection values' SiLU as the fast-form gate kernels store it
// (gate_maths.cuh's GateSilu<true>, rounded to bf16): a kernel that reads the projection
// raw sees the very bits the gate kernel would have written.
__device__ __forceinline__ uint2 SiluBf16x4(uint2 raw) {
  const float4 x = Widen4(raw);
  return make_uint2(PackBf16(GateSilu<true>(x.x), GateSilu<true>(x.y)),
                    PackBf16(GateSilu<true>(x.z), GateSilu<true>(x.w)));
}

// Four 8x8 b16 matrices, transposed: lanes 8m..8m+7 give the row addresses of matrix m.
// From a [k][n] row-major tile this yields mma B fragments (rows k0.., columns n0..: two
// n-tiles as {r0, r1} and {r2, r3} when lanes 8..15 take rows + 8 and 16..31 columns + 8),
// and from an [k][m] tile (A stored transposed) A fragments.
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t (&r)[4], const bf16* p) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void St4Bf16(bf16* p, float4 x) {
  *reinterpret_cast<uint2*>(p) = make_uint2(PackBf16(x.x, x.y), PackBf16(x.z, x.w));
}
// Four values of v into a bf16 shared tile: fp32 rounded to nearest, bf16 copied (8-byte
// loads; v's row offsets are multiples of 4 values). Zeros where !live.
__device__ __forceinline__ void StageV4(bf16* dst, const float* src, bool live) {
  St4Bf16(dst, live ? Ld4(src) : make_float4(0.0f, 0.0f, 0.0f, 0.0f));
}
__device__ __forceinline__ void StageV4(bf16* dst, const bf16* src, bool live) {
  *reinterpret_cast<uint2*>(dst) = live ? *reinterpret_cast<const uint2*>(src) : make_uint2(0u, 0u);
}

// Local state U_c = sum_j (k_j exp(G_last - G_j)) v_j^T of chunk c, one block per
// (chunk, head), one warp per 32 key rows: k exp(G_last - G) is staged once as bf16
// ([token][key], 16-byte loads), then per 64 value columns v ([token][column]) and the
// product with K = the chunk's tokens, fragments through ldmatrix.trans. As the fp32
// kernel: a sequence that keeps no final state skips its last chunk.
template <typename VT>
__global__ void __launch_bounds__(kMaxDk)
    ChunkLocalStateMmaKernel(const VT* __restrict__ k, const float* __restrict__ G,
                             const VT* __restrict__ v, PackView pack, int heads, int dk, int dv,
                             float* const* state_ptrs, float* const* out_ptrs,
                             float* __restrict__ u) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int dkp = RoundUp(dk, 32);
  const int kds = dkp + 8;                   // bf16 row stride: ldmatrix rows conflict-free
  bf16* kd = reinterpret_cast<bf16*>(smem);  // [kC][kds]: k_j exp(G_last - G_j)
  bf16* vs = kd + kC * kds;                  // [kC][kVT + 8]: v_j[vb..]
  constexpr int vss = kVT + 8;
  const int c = blockIdx.x, h = blockIdx.y;
  const int seq = ChunkSeq(pack, c);
  if (c + 1 == SeqChunkEnd(pack, seq) && !KeepsFinalState(state_ptrs, out_ptrs, seq)) return;
  const int t0 = ChunkRow0(pack, c);
  const int n = ChunkRows(pack, c);
  const int tid = threadIdx.x;
  const int64_t kstride = static_cast<int64_t>(heads) * dk;
  const int64_t vstride = static_cast<int64_t>(heads) * dv;
  const VT* kc = k + static_cast<int64_t>(t0) * kstride + static_cast<int64_t>(h) * dk;
  const float* gc = G + static_cast<int64_t>(t0) * kstride + static_cast<int64_t>(h) * dk;
  const VT* vc = v + static_cast<int64_t>(t0) * vstride + static_cast<int64_t>(h) * dv;
  const float* glast = gc + (n - 1) * kstride;
  const int k4s = dkp / 4;
#pragma unroll 2
  for (int idx = tid; idx < kC * k4s; idx += blockDim.x) {
    const int j = idx / k4s, k4 = 4 * (idx % k4s);
    float4 val = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (j < n && k4 < dk) {
      const float4 kk = Ld4f(kc + j * kstride + k4), gg = Ld4(gc + j * kstride + k4);
      const float4 gl = Ld4(glast + k4);
      val = make_float4(kk.x * __expf(gl.x - gg.x), kk.y * __expf(gl.y - gg.y),
                        kk.z * __expf(gl.z - gg.z), kk.w * __expf(gl.w - gg.w));
    }
    St4Bf16(kd + j * kds + k4, val);
  }
  const int warp = tid / 32, lane = tid % 32, grp = lane / 4, tig = lane % 4;
  const int m0 = warp * 32;
  // ldmatrix row addresses: A (kd, transposed) and B (vs) fragments.
  const int a_row = (lane % 8) + 8 * (lane / 16), a_col = 8 * ((lane / 8) % 2);
  const int b_row = (lane % 8) + 8 * ((lane / 8) % 2), b_col = 8 * (lane / 16);
  float* uc = u + (static_cast<int64_t>(c) * heads + h) * dk * dv;
  for (int vb = 0; vb < dv; vb += kVT) {
    if (vb > 0) __syncthreads();  // the previous tile's readers are done
#pragma unroll 4
    for (int idx = tid; idx < kC * (kVT / 4); idx += blockDim.x) {
      const int j = idx / (kVT / 4), n4 = 4 * (idx % (kVT / 4));
      StageV4(vs + j * vss + n4, vc + j * vstride + vb + n4, j < n && vb + n4 < dv);
    }
    __syncthreads();
    float acc[2][8][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.0f;
      }
    }
    for (int ks = 0; ks < n; ks += 16) {  // token steps past a short chunk's end add zeros
      uint32_t a[2][4];
      LdMatrixX4Trans(a[0], kd + (ks + a_row) * kds + m0 + a_col);
      LdMatrixX4Trans(a[1], kd + (ks + a_row) * kds + m0 + 16 + a_col);
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t b[4];
        LdMatrixX4Trans(b, vs + (ks + b_row) * vss + 16 * np + b_col);
        Mma(acc[0][2 * np], a[0], b[0], b[1]);
        Mma(acc[1][2 * np], a[1], b[0], b[1]);
        Mma(acc[0][2 * np + 1], a[0], b[2], b[3]);
        Mma(acc[1][2 * np + 1], a[1], b[2], b[3]);
      }
    }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = m0 + mt * 16 + grp + 8 * half;
          const int col = vb + nt * 8 + 2 * tig;
          if (row < dk && col < dv) {
            *reinterpret_cast<float2*>(uc + static_cast<int64_t>(row) * dv + col) =
                make_float2(acc[mt][nt][2 * half], acc[mt][nt][2 * half + 1]);
          }
        }
      }
    }
  }
}

// Global -> shared without staging in registers (cp.async.ca: 8- and 16-byte copies);
// !valid writes zeros and reads nothing.
template <int kBytes>
__device__ __forceinline__ void CpAsyncZfill(void* smem, const void* gmem, bool valid) {
  const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(gmem), "n"(kBytes),
               "r"(valid ? kBytes : 0));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

constexpr int kFusedKT = 32;        // key rows per block of the state walk
constexpr int kFusedStages = 4;     // chunks in flight: this one and three prefetched
constexpr int kFusedThreads = 256;  // warp w: key rows 16 (w % 2).., value columns 16 (w / 2)..
constexpr int kFusedKds = kFusedKT + 8;  // bf16 row stride of kd: ldmatrix rows conflict-free

// A stage: G (fp32) and raw k (as stored: fp32 or bf16), [kC][kFusedKT] each, and v: bf16
// as the mma reads it ([kC][kVS]), fp32 as loaded ([kC][kVT], rounded into a bf16 tile per
// chunk).
template <typename VT>
__host__ __device__ constexpr size_t FusedStageBytes() {
  return (sizeof(float) + sizeof(VT)) * kC * kFusedKT +
         (std::is_same_v<VT, float> ? sizeof(float) * kC * kVT : sizeof(bf16) * kC * kVS);
}
// A chunk's mma operands, staged from its stage: k e^{G_last - G} ([kC][kFusedKds]) and, for
// fp32 v, v rounded ([kC][kVS]). Two of them: chunk x's is multiplied while x + 1's is staged.
template <typename VT>
__host__ __device__ constexpr size_t FusedOperandBytes() {
  return sizeof(bf16) * kC * (kFusedKds + (std::is_same_v<VT, float> ? kVS : 0));
}
template <typename VT>
__host__ __device__ constexpr size_t FusedStatesSmem() {
  return kFusedStages * FusedStageBytes<VT>() + 2 * FusedOperandBytes<VT>();
}

// The chunk states of each sequence in one walk over its chunks (fla's chunk_fwd_h): one
// block per (sequence, 32 key rows x 64 value columns of the state, head), the running
// state S in fp32 registers. Chunk c: S_c (the state before it) goes to chunk_states as
// bf16 (rounded to nearest, as the output kernel rounds an fp32 S_c itself), then
// S <- exp(G_last) S + U_c, U_c = sum_j (k_j exp(G_last - G_j)) v_j^T by mma; the raw k, G
// and v of the next three chunks stream in by cp.async meanwhile. U is never stored.
// Bitwise the two-pass pair's results (ChunkLocalStateMmaKernel, then ChunkStateScanKernel;
// its S_c rounded to bf16): each U element is the same m16n8k16 products of the same bf16
// operands over the same token steps from zero, then the scan's fmaf(d, s, u). Same contract as the
// scan: S_c of the first chunk is not written where the output kernel reads the start in place, and
// a sequence that keeps no final state needs no U of its last chunk.
// kKey (bf16 only): k packed (heads * dk values a row, as G per key always is; raw_k_ld
// unused), or read in place from a projection, raw_k_ld values a row, as it is (GLA) or
// with its SiLU taken as it is staged (SiluBf16x4; TNL's layers without LRPE).
enum class RawKey { kPacked, kAsIs, kSilu };
template <typename VT, bool kHeadDecay, RawKey kKey = RawKey::kPacked>
__global__ void __launch_bounds__(kFusedThreads)
    ChunkStatesFusedMmaKernel(const VT* __restrict__ k, const float* __restrict__ G,
                              const VT* __restrict__ v, PackView pack, int heads, int dk, int dv,
                              float* const* state_ptrs, float* const* out_ptrs,
                              int64_t layer_offset, float* single, bf16* __restrict__ chunk_states,
                              int64_t vstride, int64_t raw_k_ld) {
  static_assert(kKey == RawKey::kPacked || std::is_same_v<VT, bf16>);
  constexpr bool kF32Values = std::is_same_v<VT, float>;
  constexpr size_t kStage = FusedStageBytes<VT>();
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int stage_rows[kFusedStages];  // rows of the chunk in each stage
  // Operand buffer b: kd [kC][kFusedKds], then (fp32 v only) vs [kC][kVS].
  auto kd_of = [&](int b) {
    return reinterpret_cast<bf16*>(smem + kFusedStages * kStage + b * FusedOperandBytes<VT>());
  };
  // Grid (sequences x tiles, heads), tiles fastest: the blocks that read the same k, G
  // (a key tile's value tiles) and v (a value tile's key tiles) run together, so the
  // repeated reads hit L2.
  const int key_tiles = (dk + kFusedKT - 1) / kFusedKT;
  const int tiles = key_tiles * ((dv + kVT - 1) / kVT);
  const int seq = blockIdx.x / tiles, tile = blockIdx.x % tiles, h = blockIdx.y;
  const int kb = kFusedKT * (tile % key_tiles), vb = kVT * (tile / key_tiles);
  const SeqWalk walk = SeqWalkOf(pack, state_ptrs, out_ptrs, layer_offset, single, seq);
  if (!ChunkScanHasWork(walk.chunks, walk.out != nullptr, walk.first_written == 1)) return;
  const int row_end = SeqRowEnd(pack, seq);

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, grp = lane / 4, tig = lane % 4;
  const int m0 = 16 * (warp % 2), n0 = 16 * (warp / 2);
  const int64_t kstride = static_cast<int64_t>(heads) * dk;
  const int64_t k_ld = kKey == RawKey::kPacked ? kstride : raw_k_ld;
  const int64_t per_chunk = static_cast<int64_t>(heads) * dk * dv;
  const int64_t head0 = static_cast<int64_t>(h) * dk * dv;

  // Each thread copies and stages the same columns of every chunk: 4 keys (kq) of rows
  // kr + 32 i and 4 value columns (vq) of rows vr + 16 i. The trip counts are constants
  // (the block is kFusedThreads), so the loops unroll with no remainder code.
  constexpr int kKeyQuads = kFusedKT / 4, kValueQuads = kVT / 4;
  constexpr int kKeyRowStep = kFusedThreads / kKeyQuads,
                kValueRowStep = kFusedThreads / kValueQuads;
  static_assert(kC % kKeyRowStep == 0 && kC % kValueRowStep == 0);
  const int kr = tid / kKeyQuads, kq = 4 * (tid % kKeyQuads);
  const int vr = tid / kValueQuads, vq = 4 * (tid % kValueQuads);
  const bool key_live = kb + kq < dk, value_live = vb + vq < dv;
  // This thread's first k, (per key) G and v of the next chunk to be copied: a sequence's
  // chunks are kC rows apart from its first, so the pointers step by kC rows a chunk
  // rather than being recomputed from the chunk's row (issue runs in chunk order).
  const int row0 = ChunkRow0(pack, walk.first);
  const VT* k_next =
      k + (static_cast<int64_t>(row0 + kr) * k_ld + static_cast<int64_t>(h) * dk + kb + kq);
  const float* g_next =
      G + (static_cast<int64_t>(row0 + kr) * kstride + static_cast<int64_t>(h) * dk + kb + kq);
  const VT* v_next =
      v + (static_cast<int64_t>(row0 + vr) * vstride + static_cast<int64_t>(h) * dv + vb + vq);
  const int64_t k_row_step = kKeyRowStep * k_ld, g_row_step = kKeyRowStep * kstride,
                v_row_step = kValueRowStep * vstride;

  // Stage x's regions: G, raw k, then v.
  auto stage_g = [&](int x) {
    return reinterpret_cast<float*>(smem + (x % kFusedStages) * kStage);
  };
  auto stage_k = [&](int x) { return reinterpret_cast<VT*>(stage_g(x) + kC * kFusedKT); };
  auto stage_v = [&](int x) { return stage_k(x) + kC * kFusedKT; };

  // Chunk x's raw k and G (rows past its end and keys past dk not read: masked when
  // staged) and v (zeros past the end up to the 16-row step the mma reads, and past dv).
  auto issue = [&](int x) {
    float* sg = stage_g(x);
    VT* sk = stage_k(x);
    VT* sv = stage_v(x);
    constexpr int vss = kF32Values ? kVT : kVS;
    const int t0 = row0 + kC * x, n = min(kC, row_end - t0);
    if (tid == 0) stage_rows[x % kFusedStages] = n;
    // The rows this thread copies live: none where its columns are past dk (dv).
    const int key_rows = key_live ? n : 0, value_rows = value_live ? n : 0;
    const VT* kc = k_next;
    const float* gc = g_next;
    const VT* vc = v_next;
    k_next += kC * k_ld;
    g_next += kC * kstride;
    v_next += kC * vstride;
#pragma unroll
    for (int i = 0; i < kC / kKeyRowStep; ++i) {
      const int j = kr + kKeyRowStep * i;
      if (j < key_rows) {
        CpAsyncZfill<4 * sizeof(VT)>(sk + j * kFusedKT + kq, kc + i * k_row_step, true);
        if constexpr (!kHeadDecay) {
          CpAsyncZfill<16>(sg + j * kFusedKT + kq, gc + i * g_row_step, true);
        }
      }
    }
    if constexpr (kHeadDecay) {  // one G a row: sg[j]
      if (tid < n)
        CpAsyncZfill<4>(sg + tid, G + (static_cast<int64_t>(t0) + tid) * heads + h, true);
    }
    const int rows16 = RoundUp(n, 16);
#pragma unroll
    for (int i = 0; i < kC / kValueRowStep; ++i) {
      const int j = vr + kValueRowStep * i;
      if (j < rows16) {
        const bool live = j < value_rows;
        CpAsyncZfill<4 * sizeof(VT)>(sv + j * vss + vq, live ? vc + i * v_row_step : vc, live);
      }
    }
  };

  // The running state in the C-fragment layout: s[nt][e] is S[kb + m0 + grp + 8 (e / 2)]
  // [vb + n0 + 8 nt + 2 tig + e % 2].
  float s[2][4];
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = kb + m0 + grp + 8 * (e / 2), col = vb + n0 + 8 * nt + 2 * tig + e % 2;
      s[nt][e] = (walk.state != nullptr && row < dk && col < dv)
                     ? walk.state[head0 + static_cast<int64_t>(row) * dv + col]
                     : 0.0f;
    }
  }
  // Chunk x's operands into buffer x % 2: k exp(G_last - G) (and fp32 v) as bf16, exactly
  // as the two-pass local-state kernel stages them. Returns the chunk's rows and sets d to
  // this thread's rows' decays exp(G_last).
  auto stage = [&](int x, float(&d)[2]) {
    const float* sg = stage_g(x);
    const VT* sk = stage_k(x);
    bf16* kd = kd_of(x % 2);
    const int n = stage_rows[x % kFusedStages];
    const float* glast = sg + (n - 1) * (kHeadDecay ? 1 : kFusedKT);
#pragma unroll
    for (int i = 0; i < kC / kKeyRowStep; ++i) {
      const int j = kr + kKeyRowStep * i;
      float4 val = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (j < n && key_live) {
        float4 kk;
        if constexpr (kKey == RawKey::kSilu) {
          kk = Widen4(SiluBf16x4(LdRaw4(sk + j * kFusedKT + kq)));
        } else {
          kk = Ld4f(sk + j * kFusedKT + kq);
        }
        const float4 gg = kHeadDecay ? Splat4(sg[j]) : Ld4(sg + j * kFusedKT + kq);
        const float4 gl = kHeadDecay ? Splat4(*glast) : Ld4(glast + kq);
        val = make_float4(kk.x * __expf(gl.x - gg.x), kk.y * __expf(gl.y - gg.y),
                          kk.z * __expf(gl.z - gg.z), kk.w * __expf(gl.w - gg.w));
      }
      St4Bf16(kd + j * kFusedKds + kq, val);
    }
    if constexpr (kF32Values) {
      const float* sv = stage_v(x);
      bf16* vs = kd + kC * kFusedKds;
#pragma unroll
      for (int i = 0; i < kC / kValueRowStep; ++i) {
        const int j = vr + kValueRowStep * i;
        StageV4(vs + j * kVS + vq, sv + j * kVT + vq, j < n && value_live);
      }
    }
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m0 + grp + 8 * half;
      d[half] = kb + row < dk ? __expf(glast[kHeadDecay ? 0 : row]) : 0.0f;
    }
    return n;
  };

  // Pipeline: chunk x's copies are issued three chunks ahead; its operands are staged
  // while chunk x - 1 multiplies; one barrier a chunk. The stage a copy refills and the
  // operand buffer staging overwrites were last read before that barrier.
#pragma unroll
  for (int x = 0; x < kFusedStages - 1; ++x) {
    if (x < walk.with_u) issue(x);
    CpAsyncCommit();  // empty groups keep the count: group x is chunk x
  }
  float d[2] = {0.0f, 0.0f}, d_next[2] = {0.0f, 0.0f};
  int n = 0, n_next = 0;
  if (walk.with_u > 0) {
    CpAsyncWait<kFusedStages - 2>();  // chunk 0's group has landed (this thread's copies)
    __syncthreads();                  // everyone's
    n = stage(0, d);
  }
  const int a_row = (lane % 8) + 8 * (lane / 16), a_col = 8 * ((lane / 8) % 2);
  const int b_row = (lane % 8) + 8 * ((lane / 8) % 2), b_col = 8 * (lane / 16);
  // This thread's first state element of chunk x's S_c, stepped by a chunk's states (a
  // 64-bit product a chunk otherwise).
  const int s_row = kb + m0 + grp, s_col = vb + n0 + 2 * tig;
  bf16* sc = chunk_states + static_cast<int64_t>(walk.first) * per_chunk + head0 +
             static_cast<int64_t>(s_row) * dv + s_col;
  for (int x = 0; x < walk.chunks; ++x, sc += per_chunk) {
    if (x >= walk.first_written) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          if (s_row + 8 * half < dk && s_col + 8 * nt < dv) {
            *reinterpret_cast<uint32_t*>(sc + 8 * half * dv + 8 * nt) =
                PackBf16(s[nt][2 * half], s[nt][2 * half + 1]);
          }
        }
      }
    }
    if (x >= walk.with_u) break;
    // Groups so far: chunks 0 .. x + 2. Chunk x + 1's has landed for this thread; the
    // barrier makes everyone's copies and chunk x's staged operands visible, and ends
    // chunk x - 1's mma (the last reader of stage (x + 3) % 4 and of buffer (x + 1) % 2).
    CpAsyncWait<kFusedStages - 3>();
    __syncthreads();
    if (x + kFusedStages - 1 < walk.with_u) issue(x + kFusedStages - 1);
    CpAsyncCommit();
    // Chunk x's fragments first, so their loads are in flight while chunk x + 1 stages.
    const bf16* kd = kd_of(x % 2);
    // v as the mma reads it: the staged buffer for fp32 v, the stage itself for bf16.
    const bf16* vt = kF32Values ? kd + kC * kFusedKds : reinterpret_cast<const bf16*>(stage_v(x));
    uint32_t a[kC / 16][4], b[kC / 16][4];
#pragma unroll
    for (int t = 0; t < kC / 16; ++t) {
      if (16 * t < n) {  // token steps past a short chunk's end add zeros
        LdMatrixX4Trans(a[t], kd + (16 * t + a_row) * kFusedKds + m0 + a_col);
        LdMatrixX4Trans(b[t], vt + (16 * t + b_row) * kVS + n0 + b_col);
      }
    }
    if (x + 1 < walk.with_u) n_next = stage(x + 1, d_next);
    float u[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) u[nt][e] = 0.0f;
    }
#pragma unroll
    for (int t = 0; t < kC / 16; ++t) {
      if (16 * t < n) {
        Mma(u[0], a[t], b[t][0], b[t][1]);
        Mma(u[1], a[t], b[t][2], b[t][3]);
      }
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = fmaf(d[e / 2], s[nt][e], u[nt][e]);
    }
    n = n_next;
    d[0] = d_next[0];
    d[1] = d_next[1];
  }
  if (walk.out != nullptr) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = kb + m0 + grp + 8 * (e / 2), col = vb + n0 + 8 * nt + 2 * tig + e % 2;
        if (row < dk && col < dv) walk.out[head0 + static_cast<int64_t>(row) * dv + col] = s[nt][e];
      }
    }
  }
}

constexpr int kSliceLoads = kC * kKS / 4 / kOutThreads;  // loads of 4 q (k, G) a thread

// A thread's share of one key slice of q, k (as stored) and G (zeros past the chunk's rows
// and dk); widened to fp32 only when stored to shared memory, so nothing waits on the loads
// before then.
template <typename T, bool kHeadDecay>
struct SliceRegs {
  Raw4<T> q[kSliceLoads], k[kSliceLoads];
  float4 g[kHeadDecay ? 1 : kSliceLoads];  // per head: G is not staged (HeadExponents)
};
// kHeadDecay: G is one value a (row, head); its exponents are HeadExponents, not staged.
// q0, k0, g0: the chunk's first row of the head's q, k and (per key) G, rows qstride,
// kstride and gstride values apart (kPackedK: k's stride is G's, one offset for both).
template <typename T, bool kHeadDecay, bool kPackedK>
__device__ __forceinline__ void LoadSlice(SliceRegs<T, kHeadDecay>& r, const T* __restrict__ q0,
                                          int64_t qstride, const T* __restrict__ k0,
                                          int64_t kstride, const float* __restrict__ g0,
                                          int64_t gstride, int n, int dk, int ks, int tid) {
#pragma unroll
  for (int i = 0; i < kSliceLoads; ++i) {
    const int idx = tid + i * kOutThreads;
    const int row = idx / (kKS / 4), k4 = 4 * (idx % (kKS / 4));
    r.q[i] = r.k[i] = Raw4<T>{};
    r.g[i] = {};
    if (row < n && ks + k4 < dk) {
      const int64_t off = row * kstride + ks + k4;
      r.q[i] = LdRaw4(q0 + row * qstride + ks + k4);
      r.k[i] = LdRaw4(k0 + off);
      if constexpr (!kHeadDecay) r.g[i] = Ld4(g0 + (kPackedK ? off : row * gstride + ks + k4));
    }
  }
}
template <typename T, bool kHeadDecay>
__device__ __forceinline__ void StoreSlice(const SliceRegs<T, kHeadDecay>& r, float* sq, float* sk,
                                           float* sg, int tid) {
#pragma unroll
  for (int i = 0; i < kSliceLoads; ++i) {
    const int idx = tid + i * kOutThreads;
    const int row = idx / (kKS / 4), k4 = 4 * (idx % (kKS / 4));
    *reinterpret_cast<float4*>(sq + row * kSP + k4) = Widen4(r.q[i]);
    *reinterpret_cast<float4*>(sk + row * kSP + k4) = Widen4(r.k[i]);
    if constexpr (!kHeadDecay) *reinterpret_cast<float4*>(sg + row * kSP + k4) = r.g[i];
  }
}
// How the output kernel takes q and k (RawQk's three forms, kernels_chunk_mma.h): packed
// by a gate kernel; q read raw, its SiLU taken (SiluOperands); q and k read raw, their
// SiLU taken; q and k read in place as they are.
enum class RawForm { kPacked, kSiluQuery, kSiluQueryKey, kQueryKey };
__host__ __device__ constexpr bool ReadsRawQuery(RawForm f) { return f != RawForm::kPacked; }
__host__ __device__ constexpr bool ReadsRawKey(RawForm f) {
  return f == RawForm::kSiluQueryKey || f == RawForm::kQueryKey;
}

// The SiLU of the raw operands of a slice, each value as the gate kernel computes it
// (SiluBf16x4), so the bits of the q (and k) it would have written. Masked values stay 0.
template <RawForm kForm, typename T, bool kHeadDecay>
__device__ __forceinline__ void SiluOperands(SliceRegs<T, kHeadDecay>& r) {
  if constexpr (std::is_same_v<T, bf16> &&
                (kForm == RawForm::kSiluQuery || kForm == RawForm::kSiluQueryKey)) {
#pragma unroll
    for (int i = 0; i < kSliceLoads; ++i) {
      r.q[i] = SiluBf16x4(r.q[i]);
      if constexpr (kForm == RawForm::kSiluQueryKey) r.k[i] = SiluBf16x4(r.k[i]);
    }
  }
}

// The output kernel's exponents where G is one value a (row, head) (G[g0 + row * heads];
// rows past the chunk's n read as 0, as the per-key form stages them), each the very float
// the per-key form computes at every key. G_f is the row block's first row (i0), G_f(u)
// block u's. Per-key form: the A blocks' e^{G_ia - G_f}, e^{G_ib - G_f}, k's e^{G_f - G_j}
// for this thread's rows of each block left of the diagonal, q's e^{G_ia}, e^{G_ib}, and
// the diagonal block's e^{G_ib - G_j}, e^{G_ia - G_j}. Factored form (FactoredSliceProducts):
// af, bf as above, qa = e^{G_f}, kb = e^{G_f(u) - G_j}, fu = e^{G_f - G_f(u)} and
// db = e^{G_f - G_j}.
struct HeadExponents {
  float af = 0, bf = 0, qa = 0, qb = 0;
  float kb[3][2] = {};
  float fu[3] = {};
  float db[4] = {}, da[2] = {};
};
__device__ __forceinline__ HeadExponents HeadExponentsOf(const float* __restrict__ G, int64_t g0,
                                                         int heads, int n, int i0, int ia, int ib,
                                                         int grp, int tig, bool factored) {
  auto g = [&](int row) { return row < n ? G[g0 + static_cast<int64_t>(row) * heads] : 0.0f; };
  HeadExponents e;
  const float gf = g(i0), ga = g(ia), gb = g(ib);
  e.af = __expf(ga - gf);
  e.bf = __expf(gb - gf);
  e.qa = __expf(factored ? gf : ga);
  e.qb = factored ? 0.0f : __expf(gb);
#pragma unroll
  for (int u = 0; u < 3; ++u) {
    const float gu = g(kSub * u);
    e.fu[u] = factored ? __expf(gf - gu) : 0.0f;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
      e.kb[u][nt] = __expf((factored ? gu : gf) - g(kSub * u + 8 * nt + grp));
  }
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    const float gj = g(i0 + 8 * (x / 2) + 2 * tig + (x % 2));
    e.db[x] = __expf((factored ? gf : gb) - gj);
    if (x < 2) e.da[x] = factored ? 0.0f : __expf(ga - gj);
  }
  return e;
}

// Whether a live row's G lies more than kFactorSpan from its 16-row block's first row (one
// G a row and head: the per-key form's SpansTooFar for keys that share their decay).
__device__ __forceinline__ bool HeadSpansTooFar(const float* __restrict__ G, int64_t g0, int heads,
                                                int n, int tid) {
  if (tid >= n || tid >= kC) return false;
  const float g = G[g0 + static_cast<int64_t>(tid) * heads];
  const float gf = G[g0 + static_cast<int64_t>(tid / kSub * kSub) * heads];
  return fabsf(g - gf) > kFactorSpan;
}

// An exponent as the per-key form takes it: at its own key, or (kHeadDecay) hoisted in he.
template <bool kHeadDecay>
__device__ __forceinline__ float Ex(float per_key_arg, float hoisted) {
  if constexpr (kHeadDecay) {
    return hoisted;
  } else {
    return __expf(per_key_arg);
  }
}
template <bool kHeadDecay>
__device__ __forceinline__ float2 LdG2(const float* p) {
  if constexpr (kHeadDecay) {
    return make_float2(0.0f, 0.0f);
  } else {
    return Ld2(p);
  }
}
template <bool kHeadDecay>
__device__ __forceinline__ float4 LdG4(const float* p) {
  if constexpr (kHeadDecay) {
    return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  } else {
    return Ld4(p);
  }
}

// What the slice products read and write: the staged slice (sq, sk, sg), q exp(G)'s rows
// (qe, row stride qes) and this warp's place: its row block i0, its fragment rows ia, ib
// and lane coordinates grp, tig.
struct WarpSlice {
  const float *sq, *sk, *sg;
  bf16* qe;
  int qes, warp, i0, ia, ib, grp, tig;
};

// This warp's share of one key slice: its row block of A left of the diagonal (acc_a, by
// mma), the diagonal block (diag, fp32) and its rows of q exp(G) (qe), every exponent taken
// at its own key (or, kHeadDecay, hoisted in he) as the fp32 kernel does. Terms of masked
// keys (zero q or k) add +0.
template <bool kHeadDecay>
__device__ __forceinline__ void PerKeySliceProducts(float (&acc_a)[3][2][4], float (&diag)[2][4],
                                                    const WarpSlice& w, int ks,
                                                    const HeadExponents& he) {
  constexpr bool H = kHeadDecay;
  const float *sq = w.sq, *sk = w.sk, *sg = w.sg;
  const int warp = w.warp, i0 = w.i0, ia = w.ia, ib = w.ib, grp = w.grp, tig = w.tig;
#pragma unroll
  for (int sub = 0; sub < kKS; sub += 16) {
    const int c0 = sub + 2 * tig, c1 = c0 + 8;
    const float2 gf0 = LdG2<H>(sg + i0 * kSP + c0), gf1 = LdG2<H>(sg + i0 * kSP + c1);
    const float2 qa0 = Ld2(sq + ia * kSP + c0), ga0 = LdG2<H>(sg + ia * kSP + c0);
    const float2 qb0 = Ld2(sq + ib * kSP + c0), gb0 = LdG2<H>(sg + ib * kSP + c0);
    const float2 qa1 = Ld2(sq + ia * kSP + c1), ga1 = LdG2<H>(sg + ia * kSP + c1);
    const float2 qb1 = Ld2(sq + ib * kSP + c1), gb1 = LdG2<H>(sg + ib * kSP + c1);
    uint32_t a[4];
    a[0] = PackBf16(qa0.x * Ex<H>(ga0.x - gf0.x, he.af), qa0.y * Ex<H>(ga0.y - gf0.y, he.af));
    a[1] = PackBf16(qb0.x * Ex<H>(gb0.x - gf0.x, he.bf), qb0.y * Ex<H>(gb0.y - gf0.y, he.bf));
    a[2] = PackBf16(qa1.x * Ex<H>(ga1.x - gf1.x, he.af), qa1.y * Ex<H>(ga1.y - gf1.y, he.af));
    a[3] = PackBf16(qb1.x * Ex<H>(gb1.x - gf1.x, he.bf), qb1.y * Ex<H>(gb1.y - gf1.y, he.bf));
    bf16* qrow_a = w.qe + ia * w.qes + ks;
    bf16* qrow_b = w.qe + ib * w.qes + ks;
    *reinterpret_cast<uint32_t*>(qrow_a + c0) =
        PackBf16(qa0.x * Ex<H>(ga0.x, he.qa), qa0.y * Ex<H>(ga0.y, he.qa));
    *reinterpret_cast<uint32_t*>(qrow_b + c0) =
        PackBf16(qb0.x * Ex<H>(gb0.x, he.qb), qb0.y * Ex<H>(gb0.y, he.qb));
    *reinterpret_cast<uint32_t*>(qrow_a + c1) =
        PackBf16(qa1.x * Ex<H>(ga1.x, he.qa), qa1.y * Ex<H>(ga1.y, he.qa));
    *reinterpret_cast<uint32_t*>(qrow_b + c1) =
        PackBf16(qb1.x * Ex<H>(gb1.x, he.qb), qb1.y * Ex<H>(gb1.y, he.qb));
#pragma unroll
    for (int u = 0; u < 3; ++u) {
      if (u < warp) {
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const int j = kSub * u + 8 * nt + grp;
          const float2 k0 = Ld2(sk + j * kSP + c0), g0 = LdG2<H>(sg + j * kSP + c0);
          const float2 k1 = Ld2(sk + j * kSP + c1), g1 = LdG2<H>(sg + j * kSP + c1);
          const float ek = he.kb[u][nt];
          const uint32_t b0 =
              PackBf16(k0.x * Ex<H>(gf0.x - g0.x, ek), k0.y * Ex<H>(gf0.y - g0.y, ek));
          const uint32_t b1 =
              PackBf16(k1.x * Ex<H>(gf1.x - g1.x, ek), k1.y * Ex<H>(gf1.y - g1.y, ek));
          Mma(acc_a[u][nt], a, b0, b1);
        }
      }
    }
  }
  // Diagonal block: entries (ia | ib, i0 + 8 nt + 2 tig + 0/1); those above the diagonal
  // (exponent > 0, may overflow) are selected away when A is assembled.
#pragma unroll 2
  for (int kk = 0; kk < kKS; kk += 4) {
    const float4 qa = Ld4(sq + ia * kSP + kk), ga = LdG4<H>(sg + ia * kSP + kk);
    const float4 qb = Ld4(sq + ib * kSP + kk), gb = LdG4<H>(sg + ib * kSP + kk);
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int j = i0 + 8 * (x / 2) + 2 * tig + (x % 2);
      const float4 kj = Ld4(sk + j * kSP + kk), gj = LdG4<H>(sg + j * kSP + kk);
      const float eb = he.db[x];
      float db = diag[x / 2][2 + x % 2];
      db = fmaf(qb.x * kj.x, Ex<H>(gb.x - gj.x, eb), db);
      db = fmaf(qb.y * kj.y, Ex<H>(gb.y - gj.y, eb), db);
      db = fmaf(qb.z * kj.z, Ex<H>(gb.z - gj.z, eb), db);
      db = fmaf(qb.w * kj.w, Ex<H>(gb.w - gj.w, eb), db);
      diag[x / 2][2 + x % 2] = db;
      // Row ia = i0 + grp < i0 + 8 <= j for x >= 2: above the diagonal, selected away
      // below, so not computed (kept 0).
      if (x < 2) {
        const float ea = he.da[x % 2];
        float da = diag[x / 2][x % 2];
        da = fmaf(qa.x * kj.x, Ex<H>(ga.x - gj.x, ea), da);
        da = fmaf(qa.y * kj.y, Ex<H>(ga.y - gj.y, ea), da);
        da = fmaf(qa.z * kj.z, Ex<H>(ga.z - gj.z, ea), da);
        da = fmaf(qa.w * kj.w, Ex<H>(ga.w - gj.w, ea), da);
        diag[x / 2][x % 2] = da;
      }
    }
  }
}

// The factored form of a per-key slice. With G_f the first row of a row's 16-row block,
// e^{G_i - G_j} = e^{G_i - G_f} e^{G_f - G_j} for i, j in one block, so once every row
// holds q e^{G - G_f} and k e^{G_f - G} the diagonal block is a plain fp32 dot product
// and A's left blocks and q exp(G) need one exponent a key and block, not one an element:
// ≈ 1/5 of the per-key form's exponents. The factors are safe while |G - G_f| stays
// within kFactorSpan (e^40 ≈ 2e17: no overflow, no denormal, for any finite q and k);
// past it the block takes the per-key form for the slice (kFactorSpan, above).

// Whether a live element of this thread's share of the slice lies past kFactorSpan.
template <typename T>
__device__ __forceinline__ bool SpansTooFar(const SliceRegs<T, false>& r, const float* sg, int n,
                                            int dk, int ks, int tid) {
  bool far = false;
#pragma unroll
  for (int i = 0; i < kSliceLoads; ++i) {
    const int idx = tid + i * kOutThreads;
    const int row = idx / (kKS / 4), k4 = 4 * (idx % (kKS / 4));
    if (row < n && ks + k4 < dk) {
      const float4 gf = Ld4(sg + (row / kSub * kSub) * kSP + k4), g = r.g[i];
      far |= fabsf(g.x - gf.x) > kFactorSpan || fabsf(g.y - gf.y) > kFactorSpan ||
             fabsf(g.z - gf.z) > kFactorSpan || fabsf(g.w - gf.w) > kFactorSpan;
    }
  }
  return far;
}

// Overwrites this thread's share of sq and sk with q e^{G - G_f} and k e^{G_f - G}
// (masked elements: 0). q e^{G - G_f} is the per-key form's own a-fragment value, bit for bit.
template <typename T>
__device__ __forceinline__ void FactorSlice(const SliceRegs<T, false>& r, float* sq, float* sk,
                                            const float* sg, int n, int dk, int ks, int tid) {
#pragma unroll
  for (int i = 0; i < kSliceLoads; ++i) {
    const int idx = tid + i * kOutThreads;
    const int row = idx / (kKS / 4), k4 = 4 * (idx % (kKS / 4));
    float4 qd = make_float4(0.0f, 0.0f, 0.0f, 0.0f), ku = qd;
    if (row < n && ks + k4 < dk) {
      const float4 gf = Ld4(sg + (row / kSub * kSub) * kSP + k4), g = r.g[i];
      const float4 q = Widen4(r.q[i]), k = Widen4(r.k[i]);
      qd = make_float4(q.x * __expf(g.x - gf.x), q.y * __expf(g.y - gf.y), q.z * __expf(g.z - gf.z),
                       q.w * __expf(g.w - gf.w));
      ku = make_float4(k.x * __expf(gf.x - g.x), k.y * __expf(gf.y - g.y), k.z * __expf(gf.z - g.z),
                       k.w * __expf(gf.w - g.w));
    }
    *reinterpret_cast<float4*>(sq + row * kSP + k4) = qd;
    *reinterpret_cast<float4*>(sk + row * kSP + k4) = ku;
  }
}

// A staged value times its factor where the factor is hoisted (per head), else the staged
// value itself (FactorSlice applied it).
template <bool kHeadDecay>
__device__ __forceinline__ float2 Factored(float2 staged, float hoisted) {
  if constexpr (kHeadDecay) {
    return make_float2(staged.x * hoisted, staged.y * hoisted);
  } else {
    return staged;
  }
}
template <bool kHeadDecay>
__device__ __forceinline__ float4 Factored(float4 staged, float hoisted) {
  if constexpr (kHeadDecay) {
    return make_float4(staged.x * hoisted, staged.y * hoisted, staged.z * hoisted,
                       staged.w * hoisted);
  } else {
    return staged;
  }
}

// PerKeySliceProducts' results from a factored slice: sq, sk as FactorSlice left them
// (kHeadDecay: raw, and the same factors taken from he, so that both give the same floats).
// A's left blocks take k e^{G_f(u) - G_j} e^{G_f - G_f(u)}, q exp(G) is q e^{G - G_f} e^{G_f},
// and the diagonal block the fp32 dot products of the factored rows.
template <bool kHeadDecay>
__device__ __forceinline__ void FactoredSliceProducts(float (&acc_a)[3][2][4], float (&diag)[2][4],
                                                      const WarpSlice& w, int ks,
                                                      const HeadExponents& he) {
  constexpr bool H = kHeadDecay;
  const float *sq = w.sq, *sk = w.sk, *sg = w.sg;
  const int warp = w.warp, i0 = w.i0, ia = w.ia, ib = w.ib, grp = w.grp, tig = w.tig;
#pragma unroll
  for (int sub = 0; sub < kKS; sub += 16) {
    const int c0 = sub + 2 * tig, c1 = c0 + 8;
    const float2 gf0 = LdG2<H>(sg + i0 * kSP + c0), gf1 = LdG2<H>(sg + i0 * kSP + c1);
    const float2 qa0 = Factored<H>(Ld2(sq + ia * kSP + c0), he.af),
                 qb0 = Factored<H>(Ld2(sq + ib * kSP + c0), he.bf);
    const float2 qa1 = Factored<H>(Ld2(sq + ia * kSP + c1), he.af),
                 qb1 = Factored<H>(Ld2(sq + ib * kSP + c1), he.bf);
    const uint32_t a[4] = {PackBf16(qa0.x, qa0.y), PackBf16(qb0.x, qb0.y), PackBf16(qa1.x, qa1.y),
                           PackBf16(qb1.x, qb1.y)};
    const float2 ef0 = make_float2(Ex<H>(gf0.x, he.qa), Ex<H>(gf0.y, he.qa));
    const float2 ef1 = make_float2(Ex<H>(gf1.x, he.qa), Ex<H>(gf1.y, he.qa));
    bf16* qrow_a = w.qe + ia * w.qes + ks;
    bf16* qrow_b = w.qe + ib * w.qes + ks;
    *reinterpret_cast<uint32_t*>(qrow_a + c0) = PackBf16(qa0.x * ef0.x, qa0.y * ef0.y);
    *reinterpret_cast<uint32_t*>(qrow_b + c0) = PackBf16(qb0.x * ef0.x, qb0.y * ef0.y);
    *reinterpret_cast<uint32_t*>(qrow_a + c1) = PackBf16(qa1.x * ef1.x, qa1.y * ef1.y);
    *reinterpret_cast<uint32_t*>(qrow_b + c1) = PackBf16(qb1.x * ef1.x, qb1.y * ef1.y);
#pragma unroll
    for (int u = 0; u < 3; ++u) {
      if (u < warp) {
        const float2 gu0 = LdG2<H>(sg + kSub * u * kSP + c0);
        const float2 gu1 = LdG2<H>(sg + kSub * u * kSP + c1);
        const float2 d0 =
            make_float2(Ex<H>(gf0.x - gu0.x, he.fu[u]), Ex<H>(gf0.y - gu0.y, he.fu[u]));
        const float2 d1 =
            make_float2(Ex<H>(gf1.x - gu1.x, he.fu[u]), Ex<H>(gf1.y - gu1.y, he.fu[u]));
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const int j = kSub * u + 8 * nt + grp;
          const float2 k0 = Factored<H>(Ld2(sk + j * kSP + c0), he.kb[u][nt]);
          const float2 k1 = Factored<H>(Ld2(sk + j * kSP + c1), he.kb[u][nt]);
          Mma(acc_a[u][nt], a, PackBf16(k0.x * d0.x, k0.y * d0.y),
              PackBf16(k1.x * d1.x, k1.y * d1.y));
        }
      }
    }
  }
  // Diagonal block, as PerKeySliceProducts' (entries above the diagonal are finite here and
  // selected away all the same).
#pragma unroll 2
  for (int kk = 0; kk < kKS; kk += 4) {
    const float4 qa = Factored<H>(Ld4(sq + ia * kSP + kk), he.af),
                 qb = Factored<H>(Ld4(sq + ib * kSP + kk), he.bf);
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const float4 kj =
          Factored<H>(Ld4(sk + (i0 + 8 * (x / 2) + 2 * tig + (x % 2)) * kSP + kk), he.db[x]);
      float& db = diag[x / 2][2 + x % 2];
      db = fmaf(qb.x, kj.x, db);
      db = fmaf(qb.y, kj.y, db);
      db = fmaf(qb.z, kj.z, db);
      db = fmaf(qb.w, kj.w, db);
      if (x < 2) {  // row ia is above the diagonal for x >= 2: kept 0
        float& da = diag[x / 2][x % 2];
        da = fmaf(qa.x, kj.x, da);
        da = fmaf(qa.y, kj.y, da);
        da = fmaf(qa.z, kj.z, da);
        da = fmaf(qa.w, kj.w, da);
      }
    }
  }
}

// Output of chunk c, grid (chunks, H), 4 warps: warp w owns rows 16w..16w+15. Over key
// slices of 32 it builds its row block of the intra-chunk matrix A (the blocks left of
// the diagonal by mma, the diagonal block in fp32) and stores q exp(G) as bf16; then per
// value tile of 64: o = scale (q exp(G) S + A v), both products by mma. A sequence's first
// chunk reads its start state in place where ReadsStartInPlace (none: a zero state,
// whose term is skipped); every other chunk reads its S from chunk_states (ST: bf16 from
// the state walk, fp32 from the two-pass pair; either is staged as the same bf16).
// kPipelined: the next key slice's q, k, G loads are issued into registers before the
// current slice's maths, so they are in flight meanwhile, and bf16 S_c and v tiles are
// copied by cp.async (else each slice is loaded after the previous one's maths and the
// tiles through registers: the form the two-pass pair's output keeps as the bitwise
// reference); both store and compute the same values in the same order.
// Blocks an SM, asked of ptxas: per head (TNL) 4, in 128 registers (left to itself it takes
// 161: 3 blocks); per key 3, in 168, what its shared memory holds at dk 128 (asked for 1,
// it takes 204 registers: 2 blocks, 0.40 against 0.32 ms a layer of HGRN2).
// OT: o as fp32, or (bf16 model path) each fp32 value rounded to bf16 as it is stored.
// kForm: q (and k) read in place from a projection, raw_ld values a row, with their SiLU
// taken as they are loaded where the form says so (SiluOperands); the others packed
// (heads * dk values a row, as G per key always is).
template <typename VT, typename ST, bool kPipelined, bool kHeadDecay, typename OT = float,
          RawForm kForm = RawForm::kPacked>
__global__ void __launch_bounds__(kOutThreads, kHeadDecay ? 4 : 3)
    ChunkOutputMmaKernel(const VT* __restrict__ q, const VT* __restrict__ k,
                         const float* __restrict__ G, const VT* __restrict__ v,
                         const ST* chunk_states, float* const* state_ptrs, float* const* out_ptrs,
                         int64_t layer_offset, PackView pack, int heads, int dk, int dv,
                         float scale, OT* __restrict__ o, int64_t vstride, int raw_ld) {
  // The pipelined form with bf16 v and S_c copies both tiles by cp.async.
  constexpr bool kBf16Copies = kPipelined && std::is_same_v<VT, bf16> && std::is_same_v<ST, bf16>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int dkp = RoundUp(dk, kKS);
  const int qes = dkp + 8;  // bf16 row stride of qe and st
  // Region 1: the fp32 slices of q, k, G ([kC][kSP] each) while A is built, then S.
  float* sq = reinterpret_cast<float*>(smem);
  float* sk = sq + kC * kSP;
  float* sg = sk + kC * kSP;
  bf16* st = reinterpret_cast<bf16*>(smem);  // [dkp][kVS]: S[kk][vb..]
  const int region1 = max(3 * kC * kSP * 4, dkp * kVS * 2);
  bf16* qe = reinterpret_cast<bf16*>(smem + region1);  // [kC][qes]: q exp(G)
  bf16* vt = qe + kC * qes;                            // [kC][kVS]: v_j[vb..]

  const int c = blockIdx.x, h = blockIdx.y;
  const int t0 = ChunkRow0(pack, c);
  const int n = ChunkRows(pack, c);
  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32, grp = lane / 4, tig = lane % 4;
  const int i0 = kSub * warp;
  const bool active = i0 < n;  // rows past a short chunk's end: nothing to compute
  const int ia = i0 + grp, ib = ia + 8;
  const WarpSlice ws{sq, sk, sg, qe, qes, warp, i0, ia, ib, grp, tig};
  const int64_t kstride = static_cast<int64_t>(heads) * dk;
  const int64_t qk0 = static_cast<int64_t>(t0) * kstride + static_cast<int64_t>(h) * dk;
  constexpr bool kRawQ = ReadsRawQuery(kForm), kRawK = ReadsRawKey(kForm);
  const int64_t raw0 = static_cast<int64_t>(t0) * raw_ld + static_cast<int64_t>(h) * dk;
  const VT* q0 = q + (kRawQ ? raw0 : qk0);
  const VT* k0 = k + (kRawK ? raw0 : qk0);

  float acc_a[3][2][4];  // A blocks (w, u) for u < w, C-fragment layout
  float diag[2][4];      // A block (w, w)
#pragma unroll
  for (int u = 0; u < 3; ++u) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_a[u][nt][e] = 0.0f;
    }
  }
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) diag[nt][e] = 0.0f;
  }

  // 16-byte loads, all of a thread's (4 x 3) in flight before the first store.
  SliceRegs<VT, kHeadDecay> slice;
  const int64_t g0 = kHeadDecay ? static_cast<int64_t>(t0) * heads + h : 0;
  // The exponents below: of G staged per key, or (kHeadDecay: G one value a row, the same
  // for every key) each computed once from the rows' G, the very floats the per-key form
  // computes at every key. Terms of masked keys (zero q or k) add +0 either way.
  // Per head, the choice between the factored and the per-key form is one for the chunk:
  // the per-key form's, for keys that all share their row's G.
  bool factored = false;
  HeadExponents he{};
  if constexpr (kHeadDecay) {
    factored = __syncthreads_or(HeadSpansTooFar(G, g0, heads, n, tid)) == 0;
    he = HeadExponentsOf(G, g0, heads, n, i0, ia, ib, grp, tig, factored);
  }
  auto load_slice = [&](int ks) {
    LoadSlice<VT, kHeadDecay, !kRawK>(slice, q0, kRawQ ? raw_ld : kstride, k0,
                                      kRawK ? raw_ld : kstride, kHeadDecay ? G : G + qk0, kstride,
                                      n, dk, ks, tid);
  };
  if constexpr (kPipelined) load_slice(0);
  for (int ks = 0; ks < dkp; ks += kKS) {
    if constexpr (!kPipelined) load_slice(ks);
    SiluOperands<kForm>(slice);
    StoreSlice(slice, sq, sk, sg, tid);
    __syncthreads();
    // Per-key decay: the block factors the slice (FactorSlice) unless some live G lies more
    // than kFactorSpan from its 16-row block's first row; the choice is the block's, so it
    // is the same for a chunk wherever it runs.
    if constexpr (!kHeadDecay) {
      factored = __syncthreads_or(SpansTooFar(slice, sg, n, dk, ks, tid)) == 0;
      if (factored) {
        FactorSlice(slice, sq, sk, sg, n, dk, ks, tid);
        __syncthreads();
      }
    }
    if constexpr (kPipelined) {
      if (ks + kKS < dkp) load_slice(ks + kKS);
    }
    if (active) {
      if (factored) {
        FactoredSliceProducts<kHeadDecay>(acc_a, diag, ws, ks, he);
      } else {
        PerKeySliceProducts<kHeadDecay>(acc_a, diag, ws, ks, he);
      }
    }
    __syncthreads();
  }

  // Row block w of A as bf16 A fragments, one per 16-token column block u (zero for u > w).
  uint32_t afr[4][4];
#pragma unroll
  for (int u = 0; u < 4; ++u) {
    float val[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int il = grp + 8 * (e / 2), jl = 8 * nt + 2 * tig + (e % 2);
        const float below = u < 3 ? acc_a[u < 3 ? u : 0][nt][e] : 0.0f;
        const float on = jl <= il ? diag[nt][e] : 0.0f;
        val[nt][e] = u < warp ? below : (u == warp ? on : 0.0f);
      }
    }
    afr[u][0] = PackBf16(val[0][0], val[0][1]);
    afr[u][1] = PackBf16(val[0][2], val[0][3]);
    afr[u][2] = PackBf16(val[1][0], val[1][1]);
    afr[u][3] = PackBf16(val[1][2], val[1][3]);
  }

  const int seq = ChunkSeq(pack, c);
  const ST* S = chunk_states + (static_cast<int64_t>(c) * heads + h) * dk * dv;
  const float* start_s = nullptr;  // the start state, read in place (fp32)
  if (IsFirstChunk(pack, c) && ReadsStartInPlace(state_ptrs, out_ptrs, seq)) {
    const float* start = state_ptrs[seq];
    S = nullptr;
    if (start != nullptr) start_s = start + layer_offset + static_cast<int64_t>(h) * dk * dv;
  }
  const bool has_state = S != nullptr || start_s != nullptr;
  const VT* vc = v + static_cast<int64_t>(t0) * vstride + static_cast<int64_t>(h) * dv;
  const int b_row = (lane % 8) + 8 * ((lane / 8) % 2), b_col = 8 * (lane / 16);
  for (int vb = 0; vb < dv; vb += kVT) {
    if (vb > 0) __syncthreads();  // the previous tile's readers are done
    // The bf16 copies: thread tid takes columns vq.. of rows cr + kCopyRowStep i (a fixed
    // column and row step, so no division or 64-bit product a copy).
    constexpr int kCopyRowStep = kOutThreads / (kVT / 4);
    const int cr = tid / (kVT / 4), vq = 4 * (tid % (kVT / 4));
    const bool column_live = vb + vq < dv;
    if (kBf16Copies && S != nullptr) {
      // bf16 S_c and v are copied as they are: by cp.async, every copy of the tile in
      // flight at once, nothing staged in registers.
      const ST* sc = S + static_cast<int64_t>(cr) * dv + vb + vq;
      const int64_t sc_step = static_cast<int64_t>(kCopyRowStep) * dv;
      for (int kk = cr; kk < dkp; kk += kCopyRowStep, sc += sc_step) {
        const bool live = kk < dk && column_live;
        CpAsyncZfill<8>(st + kk * kVS + vq, live ? sc : S, live);
      }
    } else if (S != nullptr) {
#pragma unroll 8
      for (int idx = tid; idx < dkp * (kVT / 4); idx += kOutThreads) {
        const int kk = idx / (kVT / 4), n4 = 4 * (idx % (kVT / 4));
        StageV4(st + kk * kVS + n4, S + static_cast<int64_t>(kk) * dv + vb + n4,
                kk < dk && vb + n4 < dv);
      }
    } else if (start_s != nullptr) {
#pragma unroll 8
      for (int idx = tid; idx < dkp * (kVT / 4); idx += kOutThreads) {
        const int kk = idx / (kVT / 4), n4 = 4 * (idx % (kVT / 4));
        StageV4(st + kk * kVS + n4, start_s + static_cast<int64_t>(kk) * dv + vb + n4,
                kk < dk && vb + n4 < dv);
      }
    }
    if constexpr (kBf16Copies) {
      const VT* vr = vc + static_cast<int64_t>(cr) * vstride + vb + vq;
#pragma unroll
      for (int i = 0; i < kC / kCopyRowStep; ++i) {
        const int j = cr + kCopyRowStep * i;
        const bool live = j < n && column_live;
        CpAsyncZfill<8>(vt + j * kVS + vq, live ? vr + kCopyRowStep * i * vstride : vc, live);
      }
      CpAsyncCommit();
      CpAsyncWait<0>();
    } else {
#pragma unroll 8
      for (int idx = tid; idx < kC * (kVT / 4); idx += kOutThreads) {
        const int j = idx / (kVT / 4), n4 = 4 * (idx % (kVT / 4));
        StageV4(vt + j * kVS + n4, vc + j * vstride + vb + n4, j < n && vb + n4 < dv);
      }
    }
    __syncthreads();
    if (!active) continue;
    float acc[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
    }
    if (has_state) {
      for (int k0 = 0; k0 < dkp; k0 += 16) {
        const bf16* ra = qe + ia * qes + k0 + 2 * tig;
        const uint32_t a[4] = {Ld32(ra), Ld32(ra + 8 * qes), Ld32(ra + 8), Ld32(ra + 8 * qes + 8)};
#pragma unroll
        for (int np = 0; np < 4; ++np) {
          uint32_t b[4];
          LdMatrixX4Trans(b, st + (k0 + b_row) * kVS + 16 * np + b_col);
          Mma(acc[2 * np], a, b[0], b[1]);
          Mma(acc[2 * np + 1], a, b[2], b[3]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      if (u <= warp) {
#pragma unroll
        for (int np = 0; np < 4; ++np) {
          uint32_t b[4];
          LdMatrixX4Trans(b, vt + (kSub * u + b_row) * kVS + 16 * np + b_col);
          Mma(acc[2 * np], afr[u], b[0], b[1]);
          Mma(acc[2 * np + 1], afr[u], b[2], b[3]);
        }
      }
    }
    // Column pairs (col even, dv a multiple of 4: both in or both out) as 8-byte (fp32) or
    // 4-byte (bf16) stores.
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int i = i0 + grp + 8 * half;
        const int col = vb + nt * 8 + 2 * tig;
        if (i < n && col < dv) {
          OT* out = o + (static_cast<int64_t>(t0 + i) * heads + h) * dv + col;
          const float lo = scale * acc[nt][2 * half], hi = scale * acc[nt][2 * half + 1];
          if constexpr (std::is_same_v<OT, float>) {
            *reinterpret_cast<float2*>(out) = make_float2(lo, hi);
          } else {
            *reinterpret_cast<uint32_t*>(out) = PackBf16(lo, hi);
          }
        }
      }
    }
  }
}

size_t LocalStateMmaSmem(int dk) { return sizeof(bf16) * kC * (RoundUp(dk, 32) + 8 + kVT + 8); }
size_t OutputMmaSmem(int dk) {
  const int qes = RoundUp(dk, kKS) + 8;
  const size_t region1 = std::max<size_t>(3 * kC * kSP * 4, RoundUp(dk, kKS) * kVS * 2);
  return region1 + sizeof(bf16) * kC * (qes + kVS);
}

// The per-head decay runs only in the bf16 model path: bf16 operands, the state walk and
// the pipelined output kernel.
template <typename VT>
bool RunsHeadDecay(bool walk_or_pipelined, int dk, int dv) {
  return std::is_same_v<VT, bf16> && walk_or_pipelined && ChunkMmaTakesBf16Values(dk, dv);
}

// Whether an operand of `width` values a row may be read in place from a buffer whose rows
// hold `ld` values of T: the rows hold it and are 16-byte aligned (the kernels' copies), and
// an int holds the stride (the output kernel's).
template <typename T>
bool InPlaceRows(int64_t ld, int64_t width) {
  return ld >= width && ld <= INT32_MAX && (ld * static_cast<int64_t>(sizeof(T))) % 16 == 0;
}

// v's row stride (v_ld; 0: heads * dv, packed): another stride (v read in place from a
// projection's columns) only in the bf16 model path, the walk and the pipelined output
// kernel, with 16-byte aligned rows. Resolves 0 to heads * dv.
template <typename VT>
bool TakesValueStride(bool walk_or_pipelined, int dk, int dv, int heads, int64_t* v_ld) {
  const int64_t packed = static_cast<int64_t>(heads) * dv;
  if (*v_ld == 0) *v_ld = packed;
  if (*v_ld == packed) return true;
  return std::is_same_v<VT, bf16> && walk_or_pipelined && ChunkMmaTakesBf16Values(dk, dv) &&
         InPlaceRows<VT>(*v_ld, packed);
}

// The form of `raw` (RawQk, kernels_chunk_mma.h), or false where it is none of the three:
// q and k read in place need bf16 operands on the walk and the pipelined output kernel,
// rows that hold them 16-byte aligned, and one stride where both are read.
template <typename VT>
bool RawQkFormOf(const RawQk& raw, DecayLayout g_layout, bool walk_or_pipelined, int dk, int dv,
                 int heads, RawForm* form) {
  *form = RawForm::kPacked;
  if (raw.q_ld == 0 && raw.k_ld == 0) return true;
  if (!(std::is_same_v<VT, bf16> && walk_or_pipelined && ChunkMmaTakesBf16Values(dk, dv) &&
        InPlaceRows<VT>(raw.q_ld, static_cast<int64_t>(heads) * dk))) {
    return false;
  }
  const bool per_key = g_layout == DecayLayout::kPerKey;
  if (raw.k_ld == 0) {
    *form = RawForm::kSiluQuery;
    return raw.silu && per_key;
  }
  if (raw.k_ld != raw.q_ld) return false;
  *form = raw.silu ? RawForm::kSiluQueryKey : RawForm::kQueryKey;
  return raw.silu != per_key;  // SiLU with g per head (TNL), as they are per key (GLA)
}

template <typename VT>
cudaError_t LaunchStatesMma(const VT* k, const float* G, DecayLayout g_layout, const VT* v,
                            const PackView& pack, int heads, int dk, int dv,
                            float* const* state_ptrs, float* const* out_ptrs, int64_t layer_offset,
                            float* single, void* chunk_room, bool fused, cudaStream_t stream,
                            int64_t v_ld = 0, const RawQk& raw = {}) {
  float* chunk_states = static_cast<float*>(chunk_room);
  if (StateChunks(pack) == 0) return cudaSuccess;
  if (dk > kMaxDk) return cudaErrorInvalidValue;
  if (!TakesValueStride<VT>(fused, dk, dv, heads, &v_ld)) return cudaErrorInvalidValue;
  RawForm form;
  if (!RawQkFormOf<VT>(raw, g_layout, fused, dk, dv, heads, &form)) return cudaErrorInvalidValue;
  const bool head_decay = g_layout == DecayLayout::kPerHead;
  if (head_decay && !RunsHeadDecay<VT>(fused, dk, dv)) return cudaErrorInvalidValue;
  if (!ChunkMmaTakesBf16Values(dk, dv)) {  // the 16-byte loads need both: the fp32 kernels
    if constexpr (!std::is_same_v<VT, float>) {
      return cudaErrorInvalidValue;
    } else {
      return state_ptrs == nullptr
                 ? ChunkGlaStates(k, G, v, pack.rows, heads, dk, dv, single, chunk_states, stream)
                 : ChunkGlaStatesPacked(k, G, v, pack, heads, dk, dv, state_ptrs, out_ptrs,
                                        layer_offset, chunk_states, stream);
    }
  }
  if (fused) {
    auto launch = [&](auto kernel) -> cudaError_t {
      constexpr size_t smem = FusedStatesSmem<VT>();
      cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             static_cast<int>(smem));
      if (err != cudaSuccess) return err;
      dim3 grid(StateSeqs(pack) * CeilDiv(dk, kFusedKT) * CeilDiv(dv, kVT), heads);
      kernel<<<grid, kFusedThreads, smem, stream>>>(k, G, v, pack, heads, dk, dv, state_ptrs,
                                                    out_ptrs, layer_offset, single,
                                                    static_cast<bf16*>(chunk_room), v_ld, raw.k_ld);
      return cudaGetLastError();
    };
    if constexpr (std::is_same_v<VT, bf16>) {
      if (form == RawForm::kSiluQueryKey) {
        return launch(ChunkStatesFusedMmaKernel<VT, true, RawKey::kSilu>);
      }
      if (form == RawForm::kQueryKey) {
        return launch(ChunkStatesFusedMmaKernel<VT, false, RawKey::kAsIs>);
      }
      if (head_decay) return launch(ChunkStatesFusedMmaKernel<VT, true>);
    }
    return launch(ChunkStatesFusedMmaKernel<VT, false>);
  }
  const size_t smem = LocalStateMmaSmem(dk);
  cudaError_t err =
      cudaFuncSetAttribute(ChunkLocalStateMmaKernel<VT>,
                           cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  dim3 grid(StateChunks(pack), heads);
  ChunkLocalStateMmaKernel<VT><<<grid, RoundUp(dk, 32), smem, stream>>>(
      k, G, v, pack, heads, dk, dv, state_ptrs, out_ptrs, chunk_states);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  return ChunkStateScan(G, pack, heads, dk, dv, state_ptrs, out_ptrs, layer_offset, single,
                        chunk_states, stream);
}

// bf16_states: chunk states by the state walk (bf16), else by the two-pass pair (fp32).
// o_act kBF16 (o rounded to bf16 as stored) runs only with bf16 operands and states.
template <typename VT>
cudaError_t LaunchOutputMma(const VT* q, const VT* k, const float* G, DecayLayout g_layout,
                            const VT* v, const void* chunk_room, bool bf16_states,
                            float* const* state_ptrs, float* const* out_ptrs, int64_t layer_offset,
                            const PackView& pack, int heads, int dk, int dv, float scale, void* o,
                            cudaStream_t stream, Act o_act = Act::kF32, int64_t v_ld = 0,
                            const RawQk& raw = {}) {
  if (pack.num_chunks == 0) return cudaSuccess;
  if (dk > kMaxDk) return cudaErrorInvalidValue;
  if (!TakesValueStride<VT>(bf16_states, dk, dv, heads, &v_ld)) return cudaErrorInvalidValue;
  // q (and k) read in place: bf16 o too (the model path's instances only).
  RawForm form;
  if (!RawQkFormOf<VT>(raw, g_layout, bf16_states, dk, dv, heads, &form) ||
      (form != RawForm::kPacked && o_act != Act::kBF16)) {
    return cudaErrorInvalidValue;
  }
  const bool head_decay = g_layout == DecayLayout::kPerHead;
  if (head_decay && !RunsHeadDecay<VT>(bf16_states, dk, dv)) return cudaErrorInvalidValue;
  const bool bf16_out = o_act == Act::kBF16;
  if (bf16_out && !(std::is_same_v<VT, bf16> && bf16_states && ChunkMmaTakesBf16Values(dk, dv))) {
    return cudaErrorInvalidValue;
  }
  if (!ChunkMmaTakesBf16Values(dk, dv)) {  // the 16-byte loads need both: the fp32 kernel
    if constexpr (!std::is_same_v<VT, float>) {
      return cudaErrorInvalidValue;
    } else {
      return ChunkGlaOutputPacked(q, k, G, v, static_cast<const float*>(chunk_room), state_ptrs,
                                  out_ptrs, layer_offset, pack, heads, dk, dv, scale,
                                  static_cast<float*>(o), stream);
    }
  }
  const size_t smem = OutputMmaSmem(dk);
  auto launch = [&](auto kernel, const auto* chunk_states, auto* out) -> cudaError_t {
    cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem));
    if (err != cudaSuccess) return err;
    dim3 grid(pack.num_chunks, heads);
    kernel<<<grid, kOutThreads, smem, stream>>>(q, k, G, v, chunk_states, state_ptrs, out_ptrs,
                                                layer_offset, pack, heads, dk, dv, scale, out, v_ld,
                                                static_cast<int>(raw.q_ld));
    return cudaGetLastError();
  };
  float* o32 = static_cast<float*>(o);
  if constexpr (std::is_same_v<VT, bf16>) {
    const auto* states = static_cast<const bf16*>(chunk_room);
    bf16* o16 = static_cast<bf16*>(o);
    switch (form) {
      case RawForm::kSiluQuery:
        return launch(ChunkOutputMmaKernel<VT, bf16, true, false, bf16, RawForm::kSiluQuery>,
                      states, o16);
      case RawForm::kSiluQueryKey:
        return launch(ChunkOutputMmaKernel<VT, bf16, true, true, bf16, RawForm::kSiluQueryKey>,
                      states, o16);
      case RawForm::kQueryKey:
        return launch(ChunkOutputMmaKernel<VT, bf16, true, false, bf16, RawForm::kQueryKey>, states,
                      o16);
      case RawForm::kPacked:
        break;
    }
    if (head_decay) {
      return bf16_out ? launch(ChunkOutputMmaKernel<VT, bf16, true, true, bf16>, states, o16)
                      : launch(ChunkOutputMmaKernel<VT, bf16, true, true>, states, o32);
    }
    if (bf16_out) return launch(ChunkOutputMmaKernel<VT, bf16, true, false, bf16>, states, o16);
  }
  return bf16_states ? launch(ChunkOutputMmaKernel<VT, bf16, true, false>,
                              static_cast<const bf16*>(chunk_room), o32)
                     : launch(ChunkOutputMmaKernel<VT, float, false, false>,
                              static_cast<const float*>(chunk_room), o32);
}

}  // namespace

bool ChunkMmaTakesBf16Values(int dk, int dv) { return dk % 4 == 0 && dv % 4 == 0; }

bool ChunkMmaReadsBf16InPlace(int64_t offset, int64_t ld) {
  return InPlaceRows<bf16>(ld, 0) && (offset * static_cast<int64_t>(sizeof(bf16))) % 16 == 0;
}

cudaError_t ChunkGlaStatesPackedMma(const void* k, const float* G, DecayLayout g_layout,
                                    const void* v, Act qkv_act, const PackView& pack, int heads,
                                    int dk, int dv, float* const* state_ptrs,
                                    float* const* out_ptrs, int64_t layer_offset,
                                    void* chunk_states, cudaStream_t stream, int64_t v_ld,
                                    const RawQk& raw) {
  HG_DISPATCH_ACT(qkv_act, return LaunchStatesMma(static_cast<const T*>(k), G, g_layout,
                                                  static_cast<const T*>(v), pack, heads, dk, dv,
                                                  state_ptrs, out_ptrs, layer_offset, nullptr,
                                                  chunk_states, true, stream, v_ld, raw));
}

cudaError_t ChunkGlaStatesPackedMmaTwoPass(const void* k, const float* G, const void* v,
                                           Act qkv_act, const PackView& pack, int heads, int dk,
                                           int dv, float* const* state_ptrs, float* const* out_ptrs,
                                           int64_t layer_offset, float* chunk_states,
                                           cudaStream_t stream) {
  HG_DISPATCH_ACT(qkv_act, return LaunchStatesMma(static_cast<const T*>(k), G, DecayLayout::kPerKey,
                                                  static_cast<const T*>(v), pack, heads, dk, dv,
                                                  state_ptrs, out_ptrs, layer_offset, nullptr,
                                                  chunk_states, false, stream));
}

cudaError_t ChunkGlaOutputPackedMma(const void* q, const void* k, const float* G,
                                    DecayLayout g_layout, const void* v, Act qkv_act,
                                    const void* chunk_states, float* const* state_ptrs,
                                    float* const* out_ptrs, int64_t layer_offset,
                                    const PackView& pack, int heads, int dk, int dv, float scale,
                                    void* o, cudaStream_t stream, Act o_act, int64_t v_ld,
                                    const RawQk& raw) {
  HG_DISPATCH_ACT(qkv_act,
                  return LaunchOutputMma(static_cast<const T*>(q), static_cast<const T*>(k), G,
                                         g_layout, static_cast<const T*>(v), chunk_states, true,
                                         state_ptrs, out_ptrs, layer_offset, pack, heads, dk, dv,
                                         scale, o, stream, o_act, v_ld, raw));
}

cudaError_t ChunkGlaOutputPackedMmaTwoPass(const void* q, const void* k, const float* G,
                                           const void* v, Act qkv_act, const float* chunk_states,
                                           float* const* state_ptrs, float* const* out_ptrs,
                                           int64_t layer_offset, const PackView& pack, int heads,
                                           int dk, int dv, float scale, float* o,
                                           cudaStream_t stream) {
  HG_DISPATCH_ACT(
      qkv_act, return LaunchOutputMma(static_cast<const T*>(q), static_cast<const T*>(k), G,
                                      DecayLayout::kPerKey, static_cast<const T*>(v), chunk_states,
                                      false, state_ptrs, out_ptrs, layer_offset, pack, heads, dk,
                                      dv, scale, o, stream));
}

cudaError_t ChunkGlaStatesMma(const float* k, const float* G, const float* v, int tokens, int heads,
                              int dk, int dv, float* state, void* chunk_states,
                              cudaStream_t stream) {
  return LaunchStatesMma(k, G, DecayLayout::kPerKey, v, SingleSequence(tokens), heads, dk, dv,
                         nullptr, nullptr, 0, state, chunk_states, true, stream);
}

cudaError_t ChunkGlaStatesMmaTwoPass(const float* k, const float* G, const float* v, int tokens,
                                     int heads, int dk, int dv, float* state, float* chunk_states,
                                     cudaStream_t stream) {
  return LaunchStatesMma(k, G, DecayLayout::kPerKey, v, SingleSequence(tokens), heads, dk, dv,
                         nullptr, nullptr, 0, state, chunk_states, false, stream);
}

cudaError_t ChunkGlaOutputMma(const float* q, const float* k, const float* G, const float* v,
                              const void* chunk_states, int tokens, int heads, int dk, int dv,
                              float scale, float* o, cudaStream_t stream) {
  return LaunchOutputMma(q, k, G, DecayLayout::kPerKey, v, chunk_states, true, nullptr, nullptr, 0,
                         SingleSequence(tokens), heads, dk, dv, scale, o, stream);
}

}  // namespace hgeval::cuda
