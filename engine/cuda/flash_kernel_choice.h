// Which flash prefill kernel FlashPrefillAttention[Packed] (kernels.h) runs, and entry
// points that name it (benchmarks and tests compare the two).
#ifndef HGEVAL_ENGINE_CUDA_FLASH_KERNEL_CHOICE_H_
#define HGEVAL_ENGINE_CUDA_FLASH_KERNEL_CHOICE_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/cuda/kernels.h"

namespace hgeval::cuda {

enum class FlashKernel {
  kMmaSync,  // kernels_attention.cu: mma.sync m16n8k16, head dims 32, 64, 128
  kWgmma,    // kernels_attention_wgmma.cu: Hopper's wgmma, head dim 128
};

// kWgmma where this build holds it (an sm_90a target), the current device is compute
// capability 9.0 and head_dim is 128; else kMmaSync. The choice depends on the model and
// the device alone, never on a pack.
FlashKernel ChosenFlashKernel(int head_dim);

// FlashPrefillAttention[Packed] on the named kernel (kWgmma where it cannot run:
// cudaErrorNotSupported).
cudaError_t FlashPrefillAttentionWith(FlashKernel kernel, const void* qkv, int rows, int heads,
                                      int kv_heads, int head_dim, const void* k_plane,
                                      const void* v_plane, int64_t pos0, float scale, void* o,
                                      cudaStream_t stream);
cudaError_t FlashPrefillAttentionPackedWith(FlashKernel kernel, const void* qkv,
                                            const PackView& pack, int heads, int kv_heads,
                                            int head_dim, void* const* cache_ptrs,
                                            const int64_t* caps, const int64_t* positions,
                                            int layer, float scale, void* o, cudaStream_t stream);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_FLASH_KERNEL_CHOICE_H_
