// The decode step's skinny GEMM: C[M, N] = A[M, K] · W[N, K]^T for M <= 32 bf16 rows,
// streaming W once (tensor-core mma, fp32 accumulate; W through the bulk-copy engine, its
// first stages loaded during the kernel before under programmatic launch). Batch invariant
// by construction: every output element sums K in an order fixed by K alone (docs/cuda.md,
// Batch invariance).
#ifndef HGEVAL_ENGINE_CUDA_DECODE_GEMM_H_
#define HGEVAL_ENGINE_CUDA_DECODE_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "engine/cuda/gemm.h"

namespace hgeval::cuda {

constexpr int64_t kDecodeGemmMaxRows = 32;

// Whether DecodeGemmNT handles this call: bf16 A and W with 16-byte aligned rows, K a
// multiple of 8, M <= kDecodeGemmMaxRows.
bool DecodeGemmFits(int64_t m, int64_t k, const MatRef& a, const MatRef& w);

// Whether the decode step's bf16 linears and head run DecodeGemmNT (else cuBLAS at the
// padded 32 rows): HGEVAL_CUDA_DECODE_GEMM=1 turns it on, =0 off; read once.
bool DecodeGemmEnabled();

// C = A W^T (c_act fp32 or bf16, row stride ldc), or with `accumulate` (fp32 C) C += A W^T
// in the epilogue: bitwise the product into a delta and AddRmsNorm's h + delta (the decode
// step's residual adds). InvalidArgument where it does not fit.
absl::Status DecodeGemmNT(cudaStream_t stream, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w,
                          void* c, Act c_act, int64_t ldc, bool accumulate = false);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_DECODE_GEMM_H_
