// Launcher of the packs' fused MLP input: the gate|up GEMM and its SwiGLU in one kernel
// (kernels_swiglu_gemm.cu says how; docs/cuda.md, performance log entry 48, what it measured).
#ifndef HGEVAL_ENGINE_CUDA_KERNELS_SWIGLU_GEMM_H_
#define HGEVAL_ENGINE_CUDA_KERNELS_SWIGLU_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

namespace hgeval::cuda {

// Whether this build holds the kernel (an sm_90a target) and the current device runs it
// (compute capability 9.0).
bool SwiGluGemmAvailable();

// Whether a call fits the kernel: K, lda and ldw multiples of 8 (16-byte rows for TMA),
// inter and out_ld even, a and w 16-byte and out 4-byte aligned.
bool SwiGluGemmFits(int k, int64_t lda, int64_t ldw, int inter, int64_t out_ld, const void* a,
                    const void* w, const void* out);

// out[r, c] = act(bf16(x_r · gate_c)) · bf16(x_r · up_c) rounded to bf16, for the bf16 rows
// x = a [m, k] (row stride lda) and w = gate | up [2 inter, k] (row stride ldw); act is
// SiLU where `silu`, else the identity (TNL's GLU). Both products sum K in order in wgmma
// k16 steps, as cuBLAS's Hopper kernels do: the same bits as the pinned gate|up GEMM into
// bf16 followed by SwiGlu (swiglu_gemm_gpu_test).
cudaError_t LaunchSwiGluGemm(cudaStream_t stream, int m, int inter, int k, const void* a,
                             int64_t lda, const void* w, int64_t ldw, bool silu, void* out,
                             int64_t out_ld);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_KERNELS_SWIGLU_GEMM_H_
