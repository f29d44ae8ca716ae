// Row-major GEMM helpers over cuBLAS. bf16 operands accumulate in fp32; fp32 operands
// use plain fp32 (no TF32). Each output element's reduction order depends only on the
// problem shape, so a row's result never depends on the other rows' values.
#ifndef HGEVAL_ENGINE_CUDA_GEMM_H_
#define HGEVAL_ENGINE_CUDA_GEMM_H_

#include <cublas_v2.h>

#include <cstdint>

#include "absl/status/status.h"
#include "engine/cuda/kernels.h"

namespace hgeval::cuda {

struct MatRef {
  const void* ptr = nullptr;
  Act act = Act::kF32;
  int64_t ld = 0;  // row stride in elements
};

// C[M, N] = alpha * A[M, K] · W[N, K]^T + beta * C  (W as nn.Linear stores it).
absl::Status GemmNT(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w,
                    void* c, Act c_act, int64_t ldc, float alpha = 1.0f, float beta = 0.0f);

// Strided batched forms (batch b at ptr + b * stride elements).
// C_b[M, N] = alpha * A_b[M, K] · B_b[N, K]^T.
absl::Status GemmNTBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch, float alpha);
// C_b[M, N] = A_b[M, K] · B_b[K, N].
absl::Status GemmNNBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_GEMM_H_
