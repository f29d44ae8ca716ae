// HGRN1's elementwise linear recurrence h_t = exp(f_t) h_{t-1} + i_t over a pack, one
// thread a channel of one sequence, state in fp32.
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/kernels.h"

namespace hgeval::cuda {
namespace {

__global__ void HgrnScanKernel(const float* __restrict__ ifg, const int32_t* seq_row0, int width,
                               float* const* state_ptrs, float* const* out_ptrs,
                               int64_t layer_offset, float* __restrict__ o) {
  const int s = blockIdx.y;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  float* base = state_ptrs[s];
  if (base == nullptr || c >= width) return;
  float* st = base + layer_offset + c;
  float* out = out_ptrs == nullptr ? base : out_ptrs[s];
  float hv = *st;
  const int r0 = seq_row0[s], r1 = seq_row0[s + 1];
  for (int64_t row = r0; row < r1; ++row) {
    const float* r = ifg + row * 3 * width;
    hv = fmaf(expf(r[width + c]), hv, r[c]);
    o[row * width + c] = hv;
  }
  if (out != nullptr) out[layer_offset + c] = hv;
}

}  // namespace

cudaError_t HgrnScan(const float* ifg, const int32_t* seq_row0, int num_seqs, int width,
                     float* const* state_ptrs, float* const* out_ptrs, int64_t layer_offset,
                     float* o, cudaStream_t stream) {
  if (num_seqs == 0) return cudaSuccess;
  dim3 grid(CeilDiv(width, 128), num_seqs);
  HgrnScanKernel<<<grid, 128, 0, stream>>>(ifg, seq_row0, width, state_ptrs, out_ptrs, layer_offset,
                                           o);
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
