#include "engine/cuda/decode_gemm.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "engine/cuda/env_switch.h"
#include "engine/cuda/kernels_decode_gemm.h"

namespace hgeval::cuda {
namespace {

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool DecodeGemmFits(int64_t m, int64_t k, const MatRef& a, const MatRef& w) {
  return a.act == Act::kBF16 && w.act == Act::kBF16 && m >= 0 && m <= kDecodeGemmMaxRows &&
         k % 8 == 0 && a.ld % 8 == 0 && w.ld % 8 == 0 && Aligned16(a.ptr) && Aligned16(w.ptr);
}

bool DecodeGemmEnabled() {
  static const bool enabled = EnvIs("HGEVAL_CUDA_DECODE_GEMM", "1");
  return enabled;
}

absl::Status DecodeGemmNT(cudaStream_t stream, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w,
                          void* c, Act c_act, int64_t ldc, bool accumulate) {
  if (!DecodeGemmFits(m, k, a, w) || (accumulate && c_act != Act::kF32)) {
    return absl::InvalidArgumentError(absl::StrCat("decode GEMM: unsupported shape or layout m=", m,
                                                   " k=", k, " accumulate=", accumulate));
  }
  if (m == 0 || n == 0) return absl::OkStatus();
  const cudaError_t err =
      LaunchDecodeGemm(stream, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a.ptr,
                       a.ld, w.ptr, w.ld, c, c_act == Act::kF32, ldc, accumulate);
  if (err != cudaSuccess) {
    return absl::InternalError(absl::StrCat("decode GEMM: ", cudaGetErrorString(err)));
  }
  return absl::OkStatus();
}

}  // namespace hgeval::cuda
