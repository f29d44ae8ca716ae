// What the two flash prefill kernels share (kernels_attention.cu's mma.sync kernel and
// kernels_attention_wgmma.cu's wgmma kernel): where a block finds its queries and keys,
// the cp.async copies that stream K/V tiles into shared memory, and the base-2 softmax
// helpers.
#ifndef HGEVAL_ENGINE_CUDA_FLASH_COMMON_CUH_
#define HGEVAL_ENGINE_CUDA_FLASH_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/kernels.h"

namespace hgeval::cuda {

// Where a flash block finds its queries and keys: one sequence's rows of qkv / o and its
// cache planes. The packed form reads them from the pack's tile table.
struct FlashSource {
  const __nv_bfloat16* qkv = nullptr;  // single form: the sequence's rows
  const __nv_bfloat16* kp = nullptr;
  const __nv_bfloat16* vp = nullptr;
  int rows = 0;
  int64_t pos0 = 0;
  __nv_bfloat16* o = nullptr;
  // Packed form (tile_seq != nullptr).
  PackView pack;
  void* const* cache_ptrs = nullptr;
  const int64_t* caps = nullptr;
  const int64_t* positions = nullptr;
  int layer = 0;
};

// One block's tile of kFlashTileRows query rows: the rows of its sequence (query row i at
// position pos0 + i, rows [q0, q0 + kFlashTileRows) of `rows`), already offset into qkv,
// o and the sequence's K and V planes.
struct FlashTile {
  const __nv_bfloat16* qkv;
  const __nv_bfloat16* kp;
  const __nv_bfloat16* vp;
  __nv_bfloat16* o;
  int rows, q0;
  int64_t pos0;
};

// Tile `tile` of the grid (single form: tile * kFlashTileRows of one sequence).
__device__ __forceinline__ FlashTile ResolveFlashTile(const FlashSource& src, int tile, int heads,
                                                      int kv_heads, int head_dim) {
  FlashTile t{src.qkv, src.kp, src.vp, src.o, src.rows, tile * kFlashTileRows, src.pos0};
  if (src.pack.tile_seq != nullptr) {
    const int seq = src.pack.tile_seq[tile];
    const int r0 = src.pack.seq_row0[seq];
    t.rows = src.pack.seq_row0[seq + 1] - r0;
    t.q0 = src.pack.tile_q0[tile];
    t.pos0 = src.positions[r0];
    const int64_t stride = static_cast<int64_t>(heads + 2 * kv_heads) * head_dim;
    t.qkv += r0 * stride;
    t.o += static_cast<int64_t>(r0) * heads * head_dim;
    const int64_t cap = src.caps[seq], kvw = static_cast<int64_t>(kv_heads) * head_dim;
    const __nv_bfloat16* cache = static_cast<const __nv_bfloat16*>(src.cache_ptrs[seq]);
    t.kp = cache + static_cast<int64_t>(src.layer) * 2 * cap * kvw;
    t.vp = t.kp + cap * kvw;
  }
  return t;
}

__device__ __forceinline__ uint32_t Pack2(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}

// 2^x on the special-function unit (the softmax works in base 2, scale folded in).
__device__ __forceinline__ float Exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 16 bytes global -> shared without staging in registers; `valid` false writes zeros.
__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem, bool valid) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `kPending` of this thread's committed groups are still in flight.
template <int kPending>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// The softmax runs in base 2: exp(s * scale) = 2^(s * scale * log2 e).
inline float Log2Scale(float scale) { return scale * 1.4426950408889634f; }

// kernels_attention_wgmma.cu: whether this build holds the wgmma kernel (an sm_90a
// target), and its launch over `tiles` tiles of kFlashTileRows rows at head dim 128
// (cudaErrorNotSupported in a build without it).
bool FlashWgmmaBuilt();
cudaError_t LaunchFlashWgmma(const FlashSource& src, int tiles, int heads, int kv_heads,
                             float scale_log2, cudaStream_t stream);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_FLASH_COMMON_CUH_
