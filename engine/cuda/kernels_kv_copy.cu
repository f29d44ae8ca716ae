// CopyKvPrefixes: a block per (copy, plane, slice of the plane's bytes), `unit`-wide
// loads and stores.
#include <algorithm>

#include "engine/cuda/kernels_kv_copy.h"

namespace hgeval::cuda {
namespace {

constexpr int kCopyThreads = 256;
// Units each thread copies at most (the grid's x extent covers the longest copy).
constexpr int64_t kUnitsPerThread = 8;

template <typename U>
__global__ void CopyKvPrefixesKernel(const KvPrefixCopy* copies) {
  const KvPrefixCopy c = copies[blockIdx.z];
  const int64_t plane = blockIdx.y;
  const int64_t n = c.bytes / static_cast<int64_t>(sizeof(U));
  const U* src =
      reinterpret_cast<const U*>(static_cast<const char*>(c.src) + plane * c.src_plane_bytes);
  U* dst = reinterpret_cast<U*>(static_cast<char*>(c.dst) + plane * c.dst_plane_bytes);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    dst[i] = src[i];
  }
}

template <typename U>
cudaError_t Launch(const KvPrefixCopy* copies, int count, int planes, int64_t max_bytes,
                   cudaStream_t stream) {
  const int64_t units = max_bytes / static_cast<int64_t>(sizeof(U));
  const int64_t per_block = kCopyThreads * kUnitsPerThread;
  const unsigned x =
      static_cast<unsigned>(std::max<int64_t>(1, (units + per_block - 1) / per_block));
  CopyKvPrefixesKernel<U><<<dim3(x, planes, count), kCopyThreads, 0, stream>>>(copies);
  return cudaGetLastError();
}

}  // namespace

cudaError_t CopyKvPrefixes(const KvPrefixCopy* copies, int count, int planes, int64_t max_bytes,
                           int unit, cudaStream_t stream) {
  if (count <= 0 || planes <= 0 || max_bytes <= 0) return cudaSuccess;
  if (count > 65535 || planes > 65535) return cudaErrorInvalidValue;
  switch (unit) {
    case 16:
      return Launch<uint4>(copies, count, planes, max_bytes, stream);
    case 4:
      return Launch<uint32_t>(copies, count, planes, max_bytes, stream);
    case 1:
      return Launch<unsigned char>(copies, count, planes, max_bytes, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace hgeval::cuda
