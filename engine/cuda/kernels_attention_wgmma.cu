// LLaMA prefill attention on Hopper's warpgroup MMA (wgmma, the sm_90a target):
// FlashAttention-3's consumer layout at head dim 128. A build without an sm_90a target
// compiles the launcher only, which refuses, and FlashPrefillAttention* keep running the
// mma.sync kernel of kernels_attention.cu.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/flash_common.cuh"
#include "engine/cuda/kernel_util.cuh"

namespace hgeval::cuda {
namespace {

constexpr int kWgHeadDim = 128;
constexpr int kWgKeys = 128;                    // keys per K/V tile
constexpr int kWgRows = 64;                     // query rows per warpgroup
constexpr int kWgThreads = 2 * 128;             // two warpgroups: kFlashTileRows rows
constexpr int kWgTileBytes = 128 * 128 * 2;     // one 128-row x 128-dim bf16 tile
constexpr int kWgHalfBytes = kWgTileBytes / 2;  // its 64-dim half: 128 rows of 128 bytes
static_assert(2 * kWgRows == kFlashTileRows, "a block owns one tile of the pack's table");
// Q, then two stages of (K, V); 1 KB for aligning the base to the swizzle's 1,024-byte period.
constexpr int kWgSmemBytes = 5 * kWgTileBytes + 1024;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

// Shared-memory layout of every tile (Q, K and V, 128 rows of 128 bf16): two 64-dim halves
// of 128 rows x 128 bytes each, the 16-byte chunk c of row r stored at chunk c ^ (r % 8)
// (the 128-byte swizzle wgmma's descriptors name). Byte offset of row r, chunk c16 (0..15).
__device__ __forceinline__ uint32_t SwizzledOffset(int r, int c16) {
  return (c16 >> 3) * kWgHalfBytes + r * 128 + (((c16 & 7) ^ (r & 7)) << 4);
}

// A wgmma shared-memory matrix descriptor with the 128-byte swizzle: start address,
// leading- and stride-dimension byte offsets (all in 16-byte units).
__device__ __forceinline__ uint64_t SmemDesc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) |
         (static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16) |
         (static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ void WgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaCommit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void WgmmaWaitAll() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Keeps the compiler from moving accesses of wgmma accumulators across the async region.
__device__ __forceinline__ void FenceOperands(float (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (+)= a b, m64n128k16: a (64 x 16) and b (128 x 16) both K-major in shared memory.
// `accumulate` 0 overwrites d.
__device__ __forceinline__ void WgmmaSS(float (&d)[64], uint64_t a_desc, uint64_t b_desc,
                                        int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%"
      "25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%"
      "48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "l"(a_desc), "l"(b_desc), "r"(accumulate));
}

// d += a b, m64n128k16: a (64 x 16) from registers (mma.sync's A fragment per warp), b
// (16 x 128) MN-major in shared memory (the transposed-B form).
__device__ __forceinline__ void WgmmaRS(float (&d)[64], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%"
      "25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%"
      "48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "{%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}

// Grid (H, tiles) as the mma.sync kernel's (heads fastest, the longest tiles first),
// kWgThreads threads. Warpgroup w owns query rows 64w..64w+63 of the block's tile; per
// 128-key tile it computes S = Q K^T (wgmma, Q and K from shared memory), the online
// softmax in registers (base 2, scale folded in, the causal mask only on tiles crossing
// its diagonal), and O += P V with P as bf16 register fragments and V from shared memory.
// K/V tiles stream in through cp.async, one tile ahead (two stages). A warpgroup skips a
// tile that lies wholly after its rows and a tile with no rows of its own. Every block
// reads only its own sequence's rows and keys, with tiles counted from its start.
__global__ void __launch_bounds__(kWgThreads, 1)
    FlashWgmmaKernel(FlashSource src, int heads, int kv_heads, float scale_log2) {
  constexpr int HD = kWgHeadDim;
  extern __shared__ __align__(1024) unsigned char wg_smem_raw[];
  const uint32_t raw_addr = static_cast<uint32_t>(__cvta_generic_to_shared(wg_smem_raw));
  const uint32_t pad = (1024 - (raw_addr & 1023)) & 1023;
  unsigned char* smem = wg_smem_raw + pad;
  const uint32_t sbase = raw_addr + pad;  // Q; stage s: K at +(1 + 2s), V at +(2 + 2s) tiles
  const int h = blockIdx.x;
  const int tile = gridDim.y - 1 - blockIdx.y;
  const int hk = h / (heads / kv_heads);
  const FlashTile ft = ResolveFlashTile(src, tile, heads, kv_heads, HD);
  const int rows = ft.rows, q0 = ft.q0;
  const int tid = threadIdx.x, lane = tid & 31;
  const int wg = tid >> 7, wwarp = (tid >> 5) & 3;
  const int g = lane >> 2, tq = lane & 3;
  const int64_t qstride = static_cast<int64_t>(heads + 2 * kv_heads) * HD;
  const int64_t kvstride = static_cast<int64_t>(kv_heads) * HD;
  const int64_t last_key = ft.pos0 + min(q0 + kFlashTileRows, rows) - 1;
  const int ntiles = static_cast<int>(last_key / kWgKeys) + 1;

  // A thread copies 16-byte chunk (tid % 16) of rows tid / 16 + 16 i, i < 8: one swizzled
  // base offset (r % 8 is the same for all its rows), advanced by 16 rows.
  const int load_c = tid & 15, load_r = tid >> 4;
  const uint32_t load_off = SwizzledOffset(load_r, load_c);
  auto load_kv = [&](int kt) {
    unsigned char* dk = smem + (1 + 2 * (kt & 1)) * kWgTileBytes + load_off;
    unsigned char* dv = dk + kWgTileBytes;
    const bf16* kcol = ft.kp + hk * HD + load_c * 8;
    const bf16* vcol = ft.vp + hk * HD + load_c * 8;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int64_t key = static_cast<int64_t>(kt) * kWgKeys + load_r + 16 * i;
      const bool valid = key <= last_key;
      const int64_t off = valid ? key * kvstride : 0;
      CpAsync16(dk + i * 16 * 128, kcol + off, valid);
      CpAsync16(dv + i * 16 * 128, vcol + off, valid);
    }
  };
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = load_r + 16 * i;
    const bool valid = q0 + r < rows;
    CpAsync16(smem + load_off + i * 16 * 128,
              ft.qkv + (valid ? (q0 + r) * qstride + h * HD + load_c * 8 : 0), valid);
  }
  load_kv(0);
  CpAsyncCommit();

  float acc[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
  // This thread's rows of the warpgroup: wr = 16 * wwarp + g and wr + 8 (accumulator
  // registers 4 n + 0/1 and 4 n + 2/3 of each 8-column block n), in scaled base-2 units.
  const int wr = 16 * wwarp + g;
  float m_row[2] = {-INFINITY, -INFINITY};
  float l_row[2] = {0.0f, 0.0f};
  const int64_t wg_pos = ft.pos0 + q0 + kWgRows * wg;  // position of the warpgroup's row 0
  const bool wg_has_rows = q0 + kWgRows * wg < rows;
  const uint32_t q_addr = sbase + wg * kWgRows * 128;

  for (int kt = 0; kt < ntiles; ++kt) {
    if (kt + 1 < ntiles) {
      load_kv(kt + 1);  // into the stage tile kt - 1 used (released by the barrier below)
      CpAsyncCommit();
      CpAsyncWait<1>();
    } else {
      CpAsyncWait<0>();
    }
    // The tensor cores read what cp.async wrote: make it visible to the async proxy.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    // Row i of the warpgroup (0..63) sees key j of the tile iff j <= diag + i.
    const int64_t diag64 = wg_pos - static_cast<int64_t>(kt) * kWgKeys;
    if (wg_has_rows && diag64 + kWgRows - 1 >= 0) {
      const bool masked = diag64 < kWgKeys - 1;
      const int diag = masked ? static_cast<int>(diag64) : 0;
      const uint32_t k_addr = sbase + (1 + 2 * (kt & 1)) * kWgTileBytes;
      const uint32_t v_addr = k_addr + kWgTileBytes;
      float s[64];
      WgmmaFence();
#pragma unroll
      for (int ks = 0; ks < HD / 16; ++ks) {
        const uint32_t koff = (ks >> 2) * kWgHalfBytes + (ks & 3) * 32;
        WgmmaSS(s, SmemDesc(q_addr + koff, 16, 1024), SmemDesc(k_addr + koff, 16, 1024),
                ks > 0 ? 1 : 0);
      }
      WgmmaCommit();
      WgmmaWaitAll();
      FenceOperands(s);
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int n = 0; n < kWgKeys / 8; ++n) {
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          float v = s[4 * n + x] * scale_log2;
          if (masked && 8 * n + 2 * tq + (x & 1) > diag + wr + 8 * (x >> 1)) v = -INFINITY;
          s[4 * n + x] = v;
          tile_max[x >> 1] = fmaxf(tile_max[x >> 1], v);
        }
      }
      float corr[2];
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        tile_max[rr] = fmaxf(tile_max[rr], __shfl_xor_sync(0xffffffffu, tile_max[rr], 1));
        tile_max[rr] = fmaxf(tile_max[rr], __shfl_xor_sync(0xffffffffu, tile_max[rr], 2));
        const float new_m = fmaxf(m_row[rr], tile_max[rr]);
        const float safe_m = new_m == -INFINITY ? 0.0f : new_m;
        corr[rr] = Exp2(m_row[rr] - safe_m);
        m_row[rr] = new_m;
        tile_max[rr] = safe_m;
      }
      // P in bf16 as the A fragments of O += P V, one per 16-key step.
      float rsum[2] = {0.0f, 0.0f};
      uint32_t pa[kWgKeys / 16][4];
#pragma unroll
      for (int n = 0; n < kWgKeys / 8; ++n) {
        float p[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          p[x] = Exp2(s[4 * n + x] - tile_max[x >> 1]);
          rsum[x >> 1] += p[x];
        }
        pa[n >> 1][(n & 1) * 2] = Pack2(p[0], p[1]);
        pa[n >> 1][(n & 1) * 2 + 1] = Pack2(p[2], p[3]);
      }
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 1);
        rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 2);
        l_row[rr] = l_row[rr] * corr[rr] + rsum[rr];
      }
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] *= corr[(i >> 1) & 1];
      // V is [key][dim] in shared memory: the MN-major B operand. 16 keys per step (two
      // 8-key groups 1,024 bytes apart), the 128 dims as two 64-dim halves.
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < kWgKeys / 16; ++kk) {
        WgmmaRS(acc, pa[kk], SmemDesc(v_addr + kk * 16 * 128, kWgHalfBytes, 1024));
      }
      WgmmaCommit();
      WgmmaWaitAll();
      FenceOperands(acc);
    }
    __syncthreads();  // this stage is free for tile kt + 2
  }
  // Normalise and store.
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    const int row = q0 + kWgRows * wg + wr + 8 * rr;
    if (row >= rows) continue;
    const float inv = 1.0f / l_row[rr];
    bf16* orow = ft.o + static_cast<int64_t>(row) * heads * HD + h * HD;
#pragma unroll
    for (int n = 0; n < HD / 8; ++n) {
      *reinterpret_cast<uint32_t*>(orow + 8 * n + 2 * tq) =
          Pack2(acc[4 * n + 2 * rr] * inv, acc[4 * n + 2 * rr + 1] * inv);
    }
  }
}

#else  // no sm_90a target in this compilation pass: an empty kernel the host never launches

__global__ void FlashWgmmaKernel(FlashSource, int, int, float) {}

#endif

}  // namespace

bool FlashWgmmaBuilt() {
#if defined(HGEVAL_CUDA_WGMMA)
  return true;
#else
  return false;
#endif
}

cudaError_t LaunchFlashWgmma(const FlashSource& src, int tiles, int heads, int kv_heads,
                             float scale_log2, cudaStream_t stream) {
  if (!FlashWgmmaBuilt()) return cudaErrorNotSupported;
  if (cudaError_t err = cudaFuncSetAttribute(
          FlashWgmmaKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kWgSmemBytes);
      err != cudaSuccess) {
    return err;
  }
  dim3 grid(heads, tiles);
  FlashWgmmaKernel<<<grid, kWgThreads, kWgSmemBytes, stream>>>(src, heads, kv_heads, scale_log2);
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
