// LLaMA prefill attention on Hopper's warpgroup MMA (wgmma, the sm_90a target):
// FlashAttention-3's layout at head dim 128 (two consumer warpgroups in ping-pong, a producer
// one loading through TMA). A build
// without an sm_90a target compiles the launcher only, which refuses, and FlashPrefillAttention*
// keep running the mma.sync kernel of kernels_attention.cu.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/flash_common.cuh"
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/mbarrier.cuh"
#include "engine/cuda/wgmma.cuh"

namespace hgeval::cuda {
namespace {

// Host and device: the block's shape and shared memory.
constexpr int kWgRows = 64;                  // query rows per warpgroup
constexpr int kWgTileBytes = 128 * 128 * 2;  // one 128-row x 128-dim bf16 tile
static_assert(2 * kWgRows == kFlashTileRows, "a block owns one tile of the pack's table");
constexpr int kWsStages = 3;         // K/V stages
constexpr int kWsThreads = 3 * 128;  // consumer warpgroups 0 and 1, producer 2
// Q, then the stages of (K, V); 1 KB for aligning the base to the swizzle's 1,024-byte
// period.
constexpr int kWsSmemBytes = (1 + 2 * kWsStages) * kWgTileBytes + 1024;

// TMA's tensor maps of a launch (Q, K, V of head dim 128, 128-byte swizzle, boxes of 64
// dims x 1 head x 128 rows): templates whose base address and row count each block
// replaces with its sequence's.
struct WgTensorMaps {
  CUtensorMap q, k, v;
};

// A block's three edited maps live in global memory (TMA reads a map from there, not from
// shared memory), one slot per multiprocessor: one block of this kernel fills an SM
// (≈ 226 KB of shared memory), so a slot is its block's alone while it runs.
constexpr int kWgMapSlots = 256;
static_assert(kWsSmemBytes > 227 * 1024 / 2,
              "the per-SM tensor-map slot is exclusive only while one block fills an SM");
__device__ CUtensorMap g_wg_maps[kWgMapSlots][3];

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

constexpr int kWgHeadDim = 128;
constexpr int kWgKeys = 128;                    // keys per K/V tile
constexpr int kWgHalfBytes = kWgTileBytes / 2;  // a tile's 64-dim half: 128 rows of 128 bytes
constexpr int kWsProducerRegs = 40, kWsConsumerRegs = 232;  // 128 x 40 + 256 x 232 <= 64K

// Shared-memory layout of every tile (Q, K and V, 128 rows of 128 bf16), as TMA's 128-byte
// swizzle writes it and wgmma's descriptors name it: two 64-dim halves of 128 rows x 128
// bytes each, the 16-byte chunk c of row r stored at chunk c ^ (r % 8).

// The 64 fp32 accumulators of a warpgroup's m64n128 tile as wgmma's first operands
// (%0..%63), listed once for both forms below.
#define HG_WGMMA_D64                                                                        \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23," \
  "%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,"    \
  "%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"
#define HG_WGMMA_D64_OPERANDS(d)                                                                  \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),  \
      "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),  \
      "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),  \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),  \
      "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// d (+)= a b, m64n128k16: a (64 x 16) and b (128 x 16) both K-major in shared memory.
// `accumulate` 0 overwrites d.
__device__ __forceinline__ void WgmmaSS(float (&d)[64], uint64_t a_desc, uint64_t b_desc,
                                        int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " HG_WGMMA_D64
      ", %64, %65, p, 1, 1, 0, 0;\n}\n"
      : HG_WGMMA_D64_OPERANDS(d)
      : "l"(a_desc), "l"(b_desc), "r"(accumulate));
}

// d += a b, m64n128k16: a (64 x 16) from registers (mma.sync's A fragment per warp), b
// (16 x 128) MN-major in shared memory (the transposed-B form).
__device__ __forceinline__ void WgmmaRS(float (&d)[64], const uint32_t (&a)[4], uint64_t b_desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " HG_WGMMA_D64
      ", {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
      : HG_WGMMA_D64_OPERANDS(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_desc), "r"(1));
}
#undef HG_WGMMA_D64
#undef HG_WGMMA_D64_OPERANDS

// Named barriers 1 and 2 (0 is __syncthreads') order the two consumer warpgroups'
// products: warpgroup w waits on barrier 1 + w before issuing and, once issued, arrives on
// the other's (256 threads: one warpgroup waiting, the other arriving).
__device__ __forceinline__ void NamedBarSync(int id) {
  asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory");
}
__device__ __forceinline__ void NamedBarArriveIf(int id, bool pred) {
  asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %1, 0;\n@q bar.arrive %0, 256;\n}\n" ::"r"(id),
               "r"(static_cast<int>(pred))
               : "memory");
}

// TMA (cp.async.bulk.tensor): a 3-D box {64 dims, 1 head, 128 rows} at (x, head, row) into
// shared memory at `dst` (1,024-byte aligned: the 128-byte swizzle's period), completing
// on `bar`'s transaction count.
__device__ __forceinline__ void TmaLoad(const CUtensorMap* map, uint32_t dst, uint64_t* bar, int x,
                                        int head, int row) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
      "[%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(map), "r"(x), "r"(head), "r"(row), "r"(SmemAddr(bar))
      : "memory");
}

// The producer, run by the producer warpgroup's first warp (`issuer`; the others return at
// once). The warp writes this block's three maps (the launch's templates with its
// sequence's base addresses and row counts, so rows past the last key, and Q rows past the
// sequence's last, read as zeros: TMA's out-of-bounds fill) into its multiprocessor's slot
// and releases them to the tensor-map proxy; lane 0 acquires them and streams the tiles:
// tile t into stage t % kWsStages once both consumers released tile t - kWsStages, K and V
// (and Q with tile 0) as two 64-dim halves each, one mbarrier transaction count per stage.
__device__ __forceinline__ void ProduceByTma(const WgTensorMaps& maps, const FlashTile& ft, int h,
                                             int hk, int ntiles, int64_t last_key, uint32_t sbase,
                                             uint64_t* full_bar, uint64_t* empty_bar, int lane,
                                             bool issuer) {
  __shared__ alignas(128) CUtensorMap smaps[3];
  if (!issuer) return;
  uint32_t smid;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(smid));
  CUtensorMap* gmaps = g_wg_maps[smid % kWgMapSlots];
  if (lane < 24) {
    reinterpret_cast<uint4*>(smaps)[lane] = reinterpret_cast<const uint4*>(&maps)[lane];
  }
  __syncwarp();
  if (lane == 0) {
    const void* base[3] = {ft.qkv, ft.kp, ft.vp};
    const uint32_t dim_rows[3] = {static_cast<uint32_t>(ft.rows),
                                  static_cast<uint32_t>(last_key + 1),
                                  static_cast<uint32_t>(last_key + 1)};
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;\n" ::"r"(
                       SmemAddr(&smaps[i])),
                   "l"(reinterpret_cast<uint64_t>(base[i]))
                   : "memory");
      asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 2, %1;\n" ::"r"(
                       SmemAddr(&smaps[i])),
                   "r"(dim_rows[i])
                   : "memory");
    }
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    asm volatile(
        "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned "
        "[%0], [%1], 128;\n" ::"l"(&gmaps[i]),
        "r"(SmemAddr(&smaps[i]))
        : "memory");
  }
  if (lane != 0) return;
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(&gmaps[i])
                 : "memory");
  }
  const int q0 = ft.q0;
  for (int t = 0; t < ntiles; ++t) {
    const int st = t % kWsStages;
    if (t >= kWsStages) MbarWait(&empty_bar[st], (t / kWsStages - 1) & 1);
    MbarArriveExpectTx(&full_bar[st], (t == 0 ? 3 : 2) * kWgTileBytes);
    if (t == 0) {
      TmaLoad(&gmaps[0], sbase, &full_bar[st], 0, h, q0);
      TmaLoad(&gmaps[0], sbase + kWgHalfBytes, &full_bar[st], 64, h, q0);
    }
    const uint32_t kdst = sbase + (1 + 2 * st) * kWgTileBytes;
    const int row = t * kWgKeys;
    TmaLoad(&gmaps[1], kdst, &full_bar[st], 0, hk, row);
    TmaLoad(&gmaps[1], kdst + kWgHalfBytes, &full_bar[st], 64, hk, row);
    TmaLoad(&gmaps[2], kdst + kWgTileBytes, &full_bar[st], 0, hk, row);
    TmaLoad(&gmaps[2], kdst + kWgTileBytes + kWgHalfBytes, &full_bar[st], 64, hk, row);
  }
}

// A warpgroup's online-softmax state over its 64 rows: this thread holds rows wr and
// wr + 8 (accumulator registers 4 n + 0/1 and 4 n + 2/3 of each 8-column block n).
struct WgSoftmax {
  float m[2] = {-INFINITY, -INFINITY};  // running max, scaled base-2 units
  float l[2] = {0.0f, 0.0f};            // running sum
  float corr[2] = {1.0f, 1.0f};         // factor for the output of earlier tiles
};

// Online softmax of one S tile (raw scores; row i of the warpgroup sees key j iff
// j <= diag + i when `masked`): updates the state and writes P as bf16 A fragments.
__device__ __forceinline__ void SoftmaxTile(float (&s)[64], bool masked, int diag, int wr, int tq,
                                            float scale_log2, WgSoftmax& st,
                                            uint32_t (&p)[kWgKeys / 16][4]) {
  float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int n = 0; n < kWgKeys / 8; ++n) {
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      if (masked && 8 * n + 2 * tq + (x & 1) > diag + wr + 8 * (x >> 1)) s[4 * n + x] = -INFINITY;
      tile_max[x >> 1] = fmaxf(tile_max[x >> 1], s[4 * n + x]);
    }
  }
  float base[2];
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    tile_max[rr] = fmaxf(tile_max[rr], __shfl_xor_sync(0xffffffffu, tile_max[rr], 1));
    tile_max[rr] = fmaxf(tile_max[rr], __shfl_xor_sync(0xffffffffu, tile_max[rr], 2));
    const float new_m = fmaxf(st.m[rr], tile_max[rr] * scale_log2);
    base[rr] = new_m == -INFINITY ? 0.0f : new_m;
    st.corr[rr] = Exp2(st.m[rr] - base[rr]);
    st.m[rr] = new_m;
  }
  float rsum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int n = 0; n < kWgKeys / 8; ++n) {
    float e[4];
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      e[x] = Exp2(fmaf(s[4 * n + x], scale_log2, -base[x >> 1]));
      rsum[x >> 1] += e[x];
    }
    p[n >> 1][(n & 1) * 2] = Pack2(e[0], e[1]);
    p[n >> 1][(n & 1) * 2 + 1] = Pack2(e[2], e[3]);
  }
#pragma unroll
  for (int rr = 0; rr < 2; ++rr) {
    rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 1);
    rsum[rr] += __shfl_xor_sync(0xffffffffu, rsum[rr], 2);
    st.l[rr] = st.l[rr] * st.corr[rr] + rsum[rr];
  }
}

// Grid (H, tiles) as the mma.sync kernel's (heads fastest, the longest tiles first).
// Warpgroup w owns query rows 64w..64w+63 of the block's tile; per 128-key tile it
// computes S = Q K^T (wgmma, Q and K from shared memory), the online softmax in
// registers (base 2, scale folded in, the causal mask on tiles crossing its diagonal),
// and O += P V with P as bf16 register fragments and V from shared memory. The P V of
// tile t - 1 is issued right after the S of tile t, so the tensor cores run it while the
// softmax works on tile t (FlashAttention-3's intra-warpgroup overlap). Both warpgroups
// run every key tile of the block (a tile after a warpgroup's rows is masked whole and
// leaves its state unchanged), so no wgmma sits on a divergent path. The two warpgroups
// take turns issuing their products (named barriers: FlashAttention-3's ping-pong), so
// the tensor cores run one's products while the other's softmax runs. A third warpgroup,
// the producer (registers moved to the consumers with setmaxnreg), streams Q and the K/V
// tiles through TMA into kWsStages stages, each completing on an mbarrier; the consumers
// release a stage through another, so they need no block barrier per tile (warp
// specialisation).
// Every block reads only its own sequence's rows and keys, with tiles counted from its
// start, and its arithmetic does not depend on the grid.
__global__ void __launch_bounds__(kWsThreads, 1)
    FlashWgmmaKernel(FlashSource src, int heads, int kv_heads, float scale_log2,
                     const __grid_constant__ WgTensorMaps maps) {
  constexpr int HD = kWgHeadDim;
  constexpr int kStages = kWsStages;
  extern __shared__ __align__(1024) unsigned char wg_smem_raw[];
  __shared__ uint64_t full_bar[kWsStages], empty_bar[kWsStages];
  const uint32_t raw_addr = SmemAddr(wg_smem_raw);
  const uint32_t pad = (1024 - (raw_addr & 1023)) & 1023;
  const uint32_t sbase = raw_addr + pad;  // Q; stage s: K at +(1 + 2s), V at +(2 + 2s) tiles
  const int h = blockIdx.x;
  const int tile = gridDim.y - 1 - blockIdx.y;
  const int hk = h / (heads / kv_heads);
  const FlashTile ft = ResolveFlashTile(src, tile, heads, kv_heads, HD);
  const int rows = ft.rows, q0 = ft.q0;
  const int tid = threadIdx.x, lane = tid & 31;
  // The warpgroup index through a shuffle, so the compiler knows it is warp-uniform.
  const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);
  const int64_t last_key = ft.pos0 + min(q0 + kFlashTileRows, rows) - 1;
  const int ntiles = static_cast<int>(last_key / kWgKeys) + 1;
  auto stage = [](int kt) { return (1 + 2 * (kt % kStages)) * kWgTileBytes; };
  auto key0 = [](int kt) { return static_cast<int64_t>(kt) * kWgKeys; };

  // The consumers: warpgroup wg's rows.
  auto consume = [&](auto wait_tile, auto after_tile) {
    const int wwarp = (tid >> 5) & 3, g = lane >> 2, tq = lane & 3;
    const int wr = 16 * wwarp + g;
    const int64_t wg_pos = ft.pos0 + q0 + kWgRows * wg;  // position of the warpgroup's row 0
    const uint32_t q_addr = sbase + wg * kWgRows * 128;
    float acc[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.0f;
    WgSoftmax st;
    uint32_t p_prev[kWgKeys / 16][4];  // P of the previous tile
    auto issue_s = [&](float(&s)[64], int kt) {
      const uint32_t k_addr = sbase + stage(kt);
#pragma unroll
      for (int ks = 0; ks < HD / 16; ++ks) {
        const uint32_t koff = (ks >> 2) * kWgHalfBytes + (ks & 3) * 32;
        WgmmaSS(s, SmemDesc(q_addr + koff, 16, 1024), SmemDesc(k_addr + koff, 16, 1024), ks > 0);
      }
      WgmmaCommit();
    };
    // V is [key][dim] in shared memory: the MN-major B operand. 16 keys per step (two
    // 8-key groups 1,024 bytes apart), the 128 dims as two 64-dim halves.
    auto issue_pv = [&](int kt) {
      const uint32_t v_addr = sbase + stage(kt) + kWgTileBytes;
#pragma unroll
      for (int kk = 0; kk < kWgKeys / 16; ++kk) {
        WgmmaRS(acc, p_prev[kk], SmemDesc(v_addr + kk * 16 * 128, kWgHalfBytes, 1024));
      }
      WgmmaCommit();
    };
    auto softmax = [&](float(&s)[64], int kt, uint32_t(&p)[kWgKeys / 16][4]) {
      const int64_t diag64 = wg_pos - key0(kt);
      const bool masked = diag64 < kWgKeys - 1;
      // A tile wholly after the rows (diag64 < -63) is masked whole.
      const int diag = masked ? static_cast<int>(max(diag64, int64_t{-kWgKeys})) : 0;
      SoftmaxTile(s, masked, diag, wr, tq, scale_log2, st, p);
    };
    // Ping-pong: a warpgroup issues its products (S of one tile, P V of the one before) only
    // after the other issued its own, so the tensor cores run one warpgroup's products
    // while the other's softmax runs. Both run ntiles + 1 issue phases; warpgroup 1 opens
    // the first for warpgroup 0 and skips the arrival after its last, so every arrival is
    // awaited.
    auto my_turn = [&] { NamedBarSync(1 + wg); };
    auto pass_turn = [&](bool last) { NamedBarArriveIf(2 - wg, !(last && wg == 1)); };
    NamedBarArriveIf(1, wg == 1);
    {
      wait_tile(0);
      float s[64];
      my_turn();
      WgmmaFence();
      issue_s(s, 0);
      pass_turn(false);
      WgmmaWait<0>();
      FenceOperands(s);
      softmax(s, 0, p_prev);
    }
    for (int kt = 1; kt < ntiles; ++kt) {
      wait_tile(kt);
      float s[64];
      my_turn();
      WgmmaFence();
      issue_s(s, kt);
      issue_pv(kt - 1);
      pass_turn(false);
      WgmmaWait<1>();
      FenceOperands(s);
      uint32_t p_cur[kWgKeys / 16][4];
      softmax(s, kt, p_cur);
      WgmmaWait<0>();
      FenceOperands(acc);
      FenceOperands(p_prev);
      after_tile(kt - 1);
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] *= st.corr[(i >> 1) & 1];
#pragma unroll
      for (int kk = 0; kk < kWgKeys / 16; ++kk) {
#pragma unroll
        for (int x = 0; x < 4; ++x) p_prev[kk][x] = p_cur[kk][x];
      }
      // The rescaled accumulators and the new P are defined here, before the next
      // wgmma.fence: ptxas serialises wgmma whose inputs are written inside its stage.
      FenceOperands(acc);
      FenceOperands(p_prev);
    }
    wait_tile(ntiles);  // V of the last tile
    my_turn();
    WgmmaFence();
    issue_pv(ntiles - 1);
    pass_turn(true);
    WgmmaWait<0>();
    FenceOperands(acc);
    FenceOperands(p_prev);
    after_tile(ntiles - 1);
    // Normalise and store.
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int row = q0 + kWgRows * wg + wr + 8 * rr;
      if (row >= rows) continue;
      const float inv = 1.0f / st.l[rr];
      bf16* orow = ft.o + static_cast<int64_t>(row) * heads * HD + h * HD;
#pragma unroll
      for (int n = 0; n < HD / 8; ++n) {
        *reinterpret_cast<uint32_t*>(orow + 8 * n + 2 * tq) =
            Pack2(acc[4 * n + 2 * rr] * inv, acc[4 * n + 2 * rr + 1] * inv);
      }
    }
  };

  InitStageBarriers(full_bar, empty_bar, 256);  // empty: every consumer thread
  if (wg == 2) {
    LowerRegisters<kWsProducerRegs>();
    // Producer: its first warp streams the tiles through TMA (ProduceByTma).
    ProduceByTma(maps, ft, h, hk, ntiles, last_key, sbase, full_bar, empty_bar, lane,
                 tid < 2 * 128 + 32);
  } else {
    RaiseRegisters<kWsConsumerRegs>();
    consume(
        [&](int kt) {
          // Tile kt (K and V; Q with tile 0) is in shared memory.
          if (kt < ntiles) MbarWait(&full_bar[kt % kWsStages], (kt / kWsStages) & 1);
        },
        [&](int kt) {
          // This thread is done with tile kt (its V was the last read of the stage).
          // Every thread arrives: no divergent branch near the wgmma instructions (one
          // elected lane per warp, even predicated inside the asm, makes ptxas serialise
          // the wgmma, C7513).
          MbarArrive(&empty_bar[kt % kWsStages]);
        });
  }
}

#else  // no sm_90a target in this compilation pass: an empty kernel the host never launches

__global__ void FlashWgmmaKernel(FlashSource, int, int, float,
                                 const __grid_constant__ WgTensorMaps) {}

#endif

}  // namespace

// The launch's tensor-map templates (cuTensorMapEncodeTiled, reached through the runtime's
// driver entry point so nothing new links): Q over the qkv rows, K and V over a cache
// plane, each [rows][heads][128] bf16 with the row strides of the pack; base addresses
// and row counts are placeholders each block replaces.
static cudaError_t EncodeWgTensorMaps(const FlashSource& src, int heads, int kv_heads,
                                      WgTensorMaps* maps) {
  const TensorMapEncodeFn encode = TensorMapEncoder();
  if (encode == nullptr) return cudaErrorNotSupported;
  void* placeholder = const_cast<__nv_bfloat16*>(src.qkv);  // 16-byte aligned, replaced
  auto one = [&](CUtensorMap* map, int nheads, int64_t row_elems) {
    const cuuint64_t dims[3] = {128, static_cast<cuuint64_t>(nheads), 1};
    const cuuint64_t strides[2] = {128 * 2, static_cast<cuuint64_t>(row_elems) * 2};
    const cuuint32_t box[3] = {64, 1, 128};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, placeholder, dims, strides, box,
                  elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  const int64_t qkv_row = static_cast<int64_t>(heads + 2 * kv_heads) * 128;
  const int64_t kv_row = static_cast<int64_t>(kv_heads) * 128;
  if (one(&maps->q, heads, qkv_row) != CUDA_SUCCESS ||
      one(&maps->k, kv_heads, kv_row) != CUDA_SUCCESS ||
      one(&maps->v, kv_heads, kv_row) != CUDA_SUCCESS) {
    return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

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
  WgTensorMaps maps{};
  if (cudaError_t err = EncodeWgTensorMaps(src, heads, kv_heads, &maps); err != cudaSuccess) {
    return err;
  }
  if (cudaError_t err = cudaFuncSetAttribute(
          FlashWgmmaKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kWsSmemBytes);
      err != cudaSuccess) {
    return err;
  }
  dim3 grid(heads, tiles);
  FlashWgmmaKernel<<<grid, kWsThreads, kWsSmemBytes, stream>>>(src, heads, kv_heads, scale_log2,
                                                               maps);
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
