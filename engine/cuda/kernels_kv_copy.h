// One launch that copies the leading positions of many KV caches: the copies a Forward
// makes for items continuing from a read-only start (each needs a cache of its own to
// write its keys into), which one cudaMemcpy2DAsync each made a host call and a device
// operation per item.
#ifndef HGEVAL_ENGINE_CUDA_KERNELS_KV_COPY_H_
#define HGEVAL_ENGINE_CUDA_KERNELS_KV_COPY_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hgeval::cuda {

// Copies the first `bytes` of each of `planes` planes (plane p at p * plane bytes).
struct KvPrefixCopy {
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t src_plane_bytes = 0;
  int64_t dst_plane_bytes = 0;
  int64_t bytes = 0;
};

// `copies` (device memory, `count` entries) share `planes`; `max_bytes` is the largest
// `bytes`. Every pointer, plane size and length a multiple of `unit` (16, 4 or 1) bytes.
cudaError_t CopyKvPrefixes(const KvPrefixCopy* copies, int count, int planes, int64_t max_bytes,
                           int unit, cudaStream_t stream);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_KERNELS_KV_COPY_H_
