// Mamba-1's causal depthwise conv and selective scan over a pack, one thread a channel of
// one sequence, state in fp32.
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/kernels.h"

namespace hgeval::cuda {
namespace {

constexpr int kMaxConv = 8;

template <typename T>
__global__ void MambaConvKernel(const float* xz, const int32_t* seq_row0, int inner, int kconv,
                                const float* conv_w, const float* conv_b, float* const* state_ptrs,
                                float* const* out_ptrs, int64_t layer_offset, T* out) {
  const int s = blockIdx.y;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  float* base = state_ptrs[s];
  if (base == nullptr || e >= inner) return;
  float* st = base + layer_offset + static_cast<int64_t>(e) * (kconv - 1);
  float* keep = out_ptrs == nullptr ? base : out_ptrs[s];
  float w[kMaxConv], prev[kMaxConv];
#pragma unroll
  for (int j = 0; j < kMaxConv; ++j) {
    w[j] = j < kconv ? conv_w[static_cast<int64_t>(e) * kconv + j] : 0.0f;
    prev[j] = j < kconv - 1 ? st[j] : 0.0f;
  }
  const float b = conv_b ? conv_b[e] : 0.0f;
  const int r0 = seq_row0[s], r1 = seq_row0[s + 1];
  for (int64_t row = r0; row < r1; ++row) {
    const float x = xz[row * 2 * inner + e];
    float acc = b;
#pragma unroll
    for (int j = 0; j < kMaxConv - 1; ++j) {
      if (j < kconv - 1) acc = fmaf(w[j], prev[j], acc);
    }
    acc = fmaf(w[kconv - 1], x, acc);
    out[row * inner + e] = FromF<T>(Silu(acc));
#pragma unroll
    for (int j = 0; j < kMaxConv - 1; ++j) {
      if (j < kconv - 2) prev[j] = prev[j + 1];
    }
    if (kconv >= 2) {
#pragma unroll
      for (int j = 0; j < kMaxConv - 1; ++j) {
        if (j == kconv - 2) prev[j] = x;
      }
    }
  }
  if (keep == nullptr) return;
  keep += layer_offset + static_cast<int64_t>(e) * (kconv - 1);
#pragma unroll
  for (int j = 0; j < kMaxConv - 1; ++j) {
    if (j < kconv - 1) keep[j] = prev[j];
  }
}

constexpr int kMaxState = 16;

template <typename T>
__global__ void MambaScanKernel(const float* x, const float* dt_raw, const float* dt_bias,
                                const float* xdbc, int64_t xdbc_ld, int bc_off, const float* xz,
                                const float* a_neg, const float* d_skip, const int32_t* seq_row0,
                                int inner, int nstate, float* const* state_ptrs,
                                float* const* out_ptrs, int64_t layer_offset, T* y) {
  const int s = blockIdx.y;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  float* base = state_ptrs[s];
  if (base == nullptr || e >= inner) return;
  float* st = base + layer_offset + static_cast<int64_t>(e) * nstate;
  float* keep = out_ptrs == nullptr ? base : out_ptrs[s];
  float hs[kMaxState], a[kMaxState];
#pragma unroll
  for (int n = 0; n < kMaxState; ++n) {
    hs[n] = n < nstate ? st[n] : 0.0f;
    a[n] = n < nstate ? a_neg[static_cast<int64_t>(e) * nstate + n] : 0.0f;
  }
  const float bias = dt_bias[e], dsk = d_skip[e];
  const int r0 = seq_row0[s], r1 = seq_row0[s + 1];
  for (int64_t row = r0; row < r1; ++row) {
    const float dt = Softplus(dt_raw[row * inner + e] + bias);
    const float xv = x[row * inner + e];
    const float* bc = xdbc + row * xdbc_ld + bc_off;
    float acc = 0.0f;
#pragma unroll
    for (int n = 0; n < kMaxState; ++n) {
      if (n < nstate) {
        const float bn = bc[n], cn = bc[nstate + n];
        hs[n] = fmaf(expf(dt * a[n]), hs[n], dt * bn * xv);
        acc = fmaf(hs[n], cn, acc);
      }
    }
    acc = fmaf(dsk, xv, acc);
    const float z = xz[row * 2 * inner + inner + e];
    y[row * inner + e] = FromF<T>(acc * Silu(z));
  }
  if (keep == nullptr) return;
  keep += layer_offset + static_cast<int64_t>(e) * nstate;
#pragma unroll
  for (int n = 0; n < kMaxState; ++n) {
    if (n < nstate) keep[n] = hs[n];
  }
}

}  // namespace

cudaError_t MambaConv(const float* xz, const int32_t* seq_row0, int num_seqs, int inner, int kconv,
                      const float* conv_w, const float* conv_b, float* const* state_ptrs,
                      float* const* out_ptrs, int64_t layer_offset, void* out, Act act,
                      cudaStream_t stream) {
  if (num_seqs == 0) return cudaSuccess;
  if (kconv < 1 || kconv > kMaxConv) return cudaErrorInvalidValue;
  dim3 grid(CeilDiv(inner, 128), num_seqs);
  HG_DISPATCH_ACT(act, MambaConvKernel<T>
                  <<<grid, 128, 0, stream>>>(xz, seq_row0, inner, kconv, conv_w, conv_b, state_ptrs,
                                             out_ptrs, layer_offset, static_cast<T*>(out)));
  return cudaGetLastError();
}

cudaError_t MambaScan(const float* x, const float* dt_raw, const float* dt_bias, const float* xdbc,
                      int64_t xdbc_ld, int bc_off, const float* xz, const float* a_neg,
                      const float* d_skip, const int32_t* seq_row0, int num_seqs, int inner,
                      int nstate, float* const* state_ptrs, float* const* out_ptrs,
                      int64_t layer_offset, void* y, Act act, cudaStream_t stream) {
  if (num_seqs == 0) return cudaSuccess;
  if (nstate > kMaxState) return cudaErrorInvalidValue;
  dim3 grid(CeilDiv(inner, 128), num_seqs);
  HG_DISPATCH_ACT(act, MambaScanKernel<T><<<grid, 128, 0, stream>>>(
                           x, dt_raw, dt_bias, xdbc, xdbc_ld, bc_off, xz, a_neg, d_skip, seq_row0,
                           inner, nstate, state_ptrs, out_ptrs, layer_offset, static_cast<T*>(y)));
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
