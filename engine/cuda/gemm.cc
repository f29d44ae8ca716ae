#include "engine/cuda/gemm.h"

#include "engine/cuda/device.h"

namespace hgeval::cuda {
namespace {

cudaDataType_t DataType(Act act) { return act == Act::kF32 ? CUDA_R_32F : CUDA_R_16BF; }

// fp32 operands: pedantic fp32 (never TF32). bf16 operands: fp32 accumulation.
cublasComputeType_t ComputeType(Act operands) {
  return operands == Act::kF32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
}

absl::Status CheckSameAct(const MatRef& a, const MatRef& b) {
  if (a.act != b.act) return absl::InternalError("GEMM operands must share a dtype");
  return absl::OkStatus();
}

}  // namespace

absl::Status GemmNT(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w,
                    void* c, Act c_act, int64_t ldc, float alpha, float beta) {
  if (m == 0 || n == 0) return absl::OkStatus();
  {
    absl::Status st = CheckSameAct(a, w);
    if (!st.ok()) return st;
  }
  HG_CUBLAS_RETURN(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                                static_cast<int>(m), static_cast<int>(k), &alpha, w.ptr,
                                DataType(w.act), static_cast<int>(w.ld), a.ptr, DataType(a.act),
                                static_cast<int>(a.ld), &beta, c, DataType(c_act),
                                static_cast<int>(ldc), ComputeType(a.act), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::Status GemmNTBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch, float alpha) {
  if (m == 0 || n == 0 || batch == 0) return absl::OkStatus();
  {
    absl::Status st = CheckSameAct(a, b);
    if (!st.ok()) return st;
  }
  const float beta = 0.0f;
  HG_CUBLAS_RETURN(cublasGemmStridedBatchedEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, b.ptr, DataType(b.act), static_cast<int>(b.ld), stride_b,
      a.ptr, DataType(a.act), static_cast<int>(a.ld), stride_a, &beta, c, DataType(c_act),
      static_cast<int>(ldc), stride_c, batch, ComputeType(a.act), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::Status GemmNNBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch) {
  if (m == 0 || n == 0 || batch == 0) return absl::OkStatus();
  {
    absl::Status st = CheckSameAct(a, b);
    if (!st.ok()) return st;
  }
  const float alpha = 1.0f, beta = 0.0f;
  HG_CUBLAS_RETURN(cublasGemmStridedBatchedEx(
      handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, b.ptr, DataType(b.act), static_cast<int>(b.ld), stride_b,
      a.ptr, DataType(a.act), static_cast<int>(a.ld), stride_a, &beta, c, DataType(c_act),
      static_cast<int>(ldc), stride_c, batch, ComputeType(a.act), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

}  // namespace hgeval::cuda
