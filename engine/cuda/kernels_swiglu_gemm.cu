// The packs' MLP input on Hopper's warpgroup MMA (wgmma, the sm_90a target): the gate|up
// GEMM and its activation in one kernel, so the 2 x inter bf16 products of a row never go
// to memory and SwiGlu's pass over them is gone. Bitwise the pinned GEMM + SwiGlu, but its
// main loop trails cuBLAS's (it reads 1.5x the bytes from L2 a product), so on the H200 it
// is about as fast as the pair and stays an opt-in (docs/cuda.md, performance log entry 48).
// A persistent block an SM walks 128-row x 128-column output tiles; its producer warp
// streams each tile's x rows and its 128 gate and 128 up rows of W through TMA (64 K a
// stage, 128-byte swizzle); its two consumer warpgroups each multiply 64 of the x rows by
// all 256 W rows (wgmma m64n256k16, K in order, fp32 accumulators), so a thread holds a
// gate product and its up product side by side, and the epilogue rounds both to bf16,
// applies the activation exactly as SwiGlu does and stores the result.
// Batch invariance: an output element is the in-order sum over K of wgmma k16 steps,
// whatever tile or row of a tile it falls in, and rows past M (zeros) enter no other row.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "engine/cuda/current_device.cuh"
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/kernels_swiglu_gemm.h"
#include "engine/cuda/mbarrier.cuh"
#include "engine/cuda/wgmma.cuh"

namespace hgeval::cuda {
namespace {

constexpr int kTileRows = 128;  // x rows a tile: two consumer warpgroups x 64
constexpr int kTileCols = 128;  // outputs a tile: its 128 gate and 128 up rows of W
constexpr int kStageK = 64;     // K a stage: one 128-byte swizzle row of bf16
constexpr int kStages = 4;
constexpr int kXBytes = kTileRows * kStageK * 2;          // 16 KiB
constexpr int kWHalfBytes = kTileCols * kStageK * 2;      // 16 KiB: the gate rows, the up rows
constexpr int kStageBytes = kXBytes + 2 * kWHalfBytes;    // 48 KiB
constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + alignment to the 1,024-byte period
constexpr int kThreads = 3 * 128;                         // consumers 0 and 1, producer 2

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

constexpr int kBand = 16;  // row tiles a band: the tile order's reuse of x and W in L2
constexpr int kProducerRegs = 40, kConsumerRegs = 232;  // 128 x 40 + 256 x 232 <= 64K

struct TileAt {
  int row, col;  // tile indices
};

// Tiles in bands of kBand row tiles, column-major within a band: the ~132 tiles running
// at once share ~8 column tiles of W and ~16 row tiles of x.
__device__ __forceinline__ TileAt TileOf(int tile, int row_tiles, int col_tiles) {
  const int band = tile / (kBand * col_tiles), in_band = tile % (kBand * col_tiles);
  const int band_rows = min(kBand, row_tiles - band * kBand);
  return TileAt{band * kBand + in_band % band_rows, in_band / band_rows};
}

// The 128 fp32 accumulators of a warpgroup's m64n256 tile as wgmma's first operands.
#define HG_WGMMA_D128                                                                \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,"  \
  "%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41," \
  "%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61," \
  "%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81," \
  "%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,"    \
  "%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116," \
  "%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}"

// d (+)= a b, m64n256k16: a (64 x 16) and b (256 x 16) both K-major in shared memory.
// `accumulate` 0 overwrites d.
__device__ __forceinline__ void WgmmaSS256(float (&d)[128], uint64_t a_desc, uint64_t b_desc,
                                           int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " HG_WGMMA_D128
      ", %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a_desc), "l"(b_desc), "r"(accumulate));
}
#undef HG_WGMMA_D128

// GluUnit of the products rounded to bf16, as SwiGlu computes it from the bf16 gate|up row.
__device__ __forceinline__ float GatedUnit(float gate, float up, int silu) {
  return GluUnit(__bfloat162float(__float2bfloat16_rn(gate)),
                 __bfloat162float(__float2bfloat16_rn(up)), silu != 0);
}

__global__ void __launch_bounds__(kThreads, 1)
    SwiGluGemmKernel(int m, int inter, int k, int silu, __nv_bfloat16* __restrict__ out,
                     int64_t out_ld, const __grid_constant__ CUtensorMap x_map,
                     const __grid_constant__ CUtensorMap w_map) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ uint64_t full_bar[kStages], empty_bar[kStages];
  const uint32_t raw_addr = SmemAddr(smem_raw);
  const uint32_t sbase = raw_addr + ((1024 - (raw_addr & 1023)) & 1023);
  const int tid = threadIdx.x;
  const int wg = __shfl_sync(0xffffffffu, tid >> 7, 0);  // warp-uniform for the compiler
  const int row_tiles = (m + kTileRows - 1) / kTileRows;
  const int col_tiles = (inter + kTileCols - 1) / kTileCols;
  const int tiles = row_tiles * col_tiles;
  const int kblocks = (k + kStageK - 1) / kStageK;
  InitStageBarriers(full_bar, empty_bar, 256);  // empty: every consumer thread

  if (wg == 2) {
    LowerRegisters<kProducerRegs>();
    if (tid != 2 * 128) return;
    uint32_t use = 0;  // stage uses so far: stage use % kStages, its phase use / kStages
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const TileAt at = TileOf(tile, row_tiles, col_tiles);
      for (int kb = 0; kb < kblocks; ++kb, ++use) {
        const int st = use % kStages;
        if (use >= kStages) MbarWait(&empty_bar[st], (use / kStages - 1) & 1);
        MbarArriveExpectTx(&full_bar[st], kStageBytes);
        const uint32_t dst = sbase + st * kStageBytes;
        const int k0 = kb * kStageK;
        TmaLoad2D(&x_map, dst, &full_bar[st], k0, at.row * kTileRows);
        TmaLoad2D(&w_map, dst + kXBytes, &full_bar[st], k0, at.col * kTileCols);
        TmaLoad2D(&w_map, dst + kXBytes + kWHalfBytes, &full_bar[st], k0,
                  inter + at.col * kTileCols);
      }
    }
    return;
  }

  RaiseRegisters<kConsumerRegs>();
  const int lane = tid & 31, wq = (tid >> 5) & 3, g = lane >> 2, tq = lane & 3;
  float acc[128];
  // Defined for the compiler, which sees wgmma read acc (a tile's first product overwrites).
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
  uint32_t use = 0;
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const TileAt at = TileOf(tile, row_tiles, col_tiles);
    for (int kb = 0; kb < kblocks; ++kb, ++use) {
      const int st = use % kStages;
      MbarWait(&full_bar[st], (use / kStages) & 1);
      const uint32_t x_addr = sbase + st * kStageBytes + wg * 64 * 128;
      const uint32_t w_addr = sbase + st * kStageBytes + kXBytes;
      WgmmaFence();
#pragma unroll
      for (int ks = 0; ks < kStageK / 16; ++ks) {
        WgmmaSS256(acc, SmemDesc(x_addr + ks * 32, 16, 1024), SmemDesc(w_addr + ks * 32, 16, 1024),
                   kb > 0 || ks > 0);
      }
      WgmmaCommit();
      if (kb > 0) {
        // The previous stage's products are done: its buffers go back to the producer.
        WgmmaWait<1>();
        FenceOperands(acc);
        MbarArrive(&empty_bar[(use - 1) % kStages]);
      }
    }
    WgmmaWait<0>();
    FenceOperands(acc);
    MbarArrive(&empty_bar[(use - 1) % kStages]);
    // Thread (wq, g, tq) holds rows 16 wq + g (+ 8) of its warpgroup's 64, columns
    // 8 j + 2 tq (+ 1) of 8-column block j: blocks 0..15 the gate products, 16..31 the up.
    const int row0 = at.row * kTileRows + wg * 64 + 16 * wq + g;
    const int col0 = at.col * kTileCols + 2 * tq;
#pragma unroll
    for (int rr = 0; rr < 2; ++rr) {
      const int row = row0 + 8 * rr;
      if (row >= m) continue;
      __nv_bfloat16* orow = out + static_cast<int64_t>(row) * out_ld;
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        const int col = col0 + 8 * j;
        if (col >= inter) continue;
        const int gi = 4 * j + 2 * rr, ui = 64 + gi;
        *reinterpret_cast<__nv_bfloat162*>(orow + col) = __floats2bfloat162_rn(
            GatedUnit(acc[gi], acc[ui], silu), GatedUnit(acc[gi + 1], acc[ui + 1], silu));
      }
    }
  }
}

#else  // no sm_90a target in this compilation pass: an empty kernel the host never launches

__global__ void SwiGluGemmKernel(int, int, int, int, __nv_bfloat16* __restrict__, int64_t,
                                 const __grid_constant__ CUtensorMap,
                                 const __grid_constant__ CUtensorMap) {}

#endif

// A 2-D bf16 tensor map over `rows` rows of `k` values `ld` apart, in boxes of 64 K x 128
// rows with the 128-byte swizzle; elements past either extent read as zeros.
bool EncodeRows(CUtensorMap* map, const void* base, int k, int64_t rows, int64_t ld) {
  const TensorMapEncodeFn encode = TensorMapEncoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * 2};
  const cuuint32_t box[2] = {kStageK, kTileRows};
  const cuuint32_t elem_strides[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides,
                box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

bool Aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace

bool SwiGluGemmAvailable() {
#if defined(HGEVAL_CUDA_WGMMA)
  return CurrentComputeCapability() == 90 && TensorMapEncoder() != nullptr;
#else
  return false;
#endif
}

bool SwiGluGemmFits(int k, int64_t lda, int64_t ldw, int inter, int64_t out_ld, const void* a,
                    const void* w, const void* out) {
  return k > 0 && k % 8 == 0 && lda % 8 == 0 && ldw % 8 == 0 && inter % 2 == 0 && out_ld % 2 == 0 &&
         Aligned(a, 16) && Aligned(w, 16) && Aligned(out, 4);
}

cudaError_t LaunchSwiGluGemm(cudaStream_t stream, int m, int inter, int k, const void* a,
                             int64_t lda, const void* w, int64_t ldw, bool silu, void* out,
                             int64_t out_ld) {
  if (!SwiGluGemmAvailable()) return cudaErrorNotSupported;
  if (!SwiGluGemmFits(k, lda, ldw, inter, out_ld, a, w, out)) return cudaErrorInvalidValue;
  if (m <= 0 || inter <= 0) return cudaSuccess;
  CUtensorMap x_map, w_map;
  if (!EncodeRows(&x_map, a, k, m, lda) || !EncodeRows(&w_map, w, k, 2 * int64_t{inter}, ldw)) {
    return cudaErrorInvalidValue;
  }
  if (cudaError_t err = cudaFuncSetAttribute(
          SwiGluGemmKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes);
      err != cudaSuccess) {
    return err;
  }
  const int tiles = ((m + kTileRows - 1) / kTileRows) * ((inter + kTileCols - 1) / kTileCols);
  const int sms = std::max(1, CurrentDeviceAttribute(cudaDevAttrMultiProcessorCount).value_or(1));
  SwiGluGemmKernel<<<std::min(tiles, sms), kThreads, kSmemBytes, stream>>>(
      m, inter, k, silu ? 1 : 0, static_cast<__nv_bfloat16*>(out), out_ld, x_map, w_map);
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
