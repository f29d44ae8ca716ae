// Launcher of the decode step's skinny bf16 GEMM (decode_gemm.h says what it computes and
// checks its preconditions: bf16 A[m, k] and W[n, k] with 16-byte aligned rows, k % 8 == 0,
// m <= 32). C++17, for the .cu side.
#ifndef HGEVAL_ENGINE_CUDA_KERNELS_DECODE_GEMM_H_
#define HGEVAL_ENGINE_CUDA_KERNELS_DECODE_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hgeval::cuda {

// The kernels that compute it, with the same bits: one 512-thread block a W tile group
// (kBlock), or a persistent block a multiprocessor streaming W through the bulk-copy engine
// (kStream). docs/cuda.md, performance log entries 9, 42 and 51.
enum class DecodeGemmForm { kBlock, kStream };

// C[m, n] (fp32 when c_f32, else bf16; row stride ldc) = A[m, k] · W[n, k]^T, in `form`;
// with `accumulate` (fp32 C only) C += the product, one fp32 add an element (as
// AddRmsNorm adds a delta). cudaErrorInvalidValue for accumulate into a bf16 C.
cudaError_t LaunchDecodeGemmForm(DecodeGemmForm form, cudaStream_t stream, int m, int n, int k,
                                 const void* a, int64_t lda, const void* w, int64_t ldw, void* c,
                                 bool c_f32, int64_t ldc, bool accumulate = false);

// The same in the form HGEVAL_DECODE_GEMM_FORM names (block or stream; default stream).
cudaError_t LaunchDecodeGemm(cudaStream_t stream, int m, int n, int k, const void* a, int64_t lda,
                             const void* w, int64_t ldw, void* c, bool c_f32, int64_t ldc,
                             bool accumulate = false);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_KERNELS_DECODE_GEMM_H_
