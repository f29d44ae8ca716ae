// Per-element gate maths shared by the gate kernels (kernels_common.cu), their fusions
// with the chunk-local cumsum (kernels_fused_gates.cu) and the chunk output kernel's q SiLU
// (kernels_chunk_mma.cu): one definition, so all compute the same floats.
#ifndef HGEVAL_ENGINE_CUDA_GATE_MATHS_CUH_
#define HGEVAL_ENGINE_CUDA_GATE_MATHS_CUH_

#include <cstdint>
#include <type_traits>

#include "engine/cuda/kernel_util.cuh"

namespace hgeval::cuda {

// The gate functions in two precisions. Accurate (kFast false): the CUDA maths library's
// expf / logf and IEEE division, what fp32 mode computes. Fast: the hardware approximations
// (__expf, __logf, __fdividef; a few fp32 ulp, the log's error absolute near 1), for bf16
// mode's packs, whose q and k are then rounded to bf16 and whose G enters the kernels only
// through exponents of differences: the accurate forms cost ≈ 80 instructions a channel
// and left the gate kernel bound by issue, not bytes (performance log entry 31).
// The one rule for which form a gate kernel takes: fast where its operands are bf16.
template <typename T>
inline constexpr bool kFastGateMaths = std::is_same_v<T, bf16>;

template <bool kFast>
__device__ __forceinline__ float GateSigmoid(float x) {
  return kFast ? __fdividef(1.0f, 1.0f + __expf(-x)) : Sigmoid(x);
}
template <bool kFast>
__device__ __forceinline__ float GateSilu(float x) {
  return kFast ? __fdividef(x, 1.0f + __expf(-x)) : Silu(x);
}
template <bool kFast>
__device__ __forceinline__ float GateLog(float x) {
  return kFast ? __logf(x) : logf(x);
}
// log(sigmoid(x)) = min(x, 0) - log(1 + e^{-|x|}); the fast form drops log1p's accuracy
// below 1e-7, an absolute error that size.
template <bool kFast>
__device__ __forceinline__ float GateLogSigmoid(float x) {
  return kFast ? fminf(x, 0.0f) - __logf(1.0f + __expf(-fabsf(x))) : LogSigmoid(x);
}

// HGRN2's key (1 - forget gate, lower-bounded) and log forget gate from f; has_lb false:
// no lower bound (lb unused).
template <bool kFast = false>
__device__ __forceinline__ void Hgrn2KeyAndLogGate(float f, bool has_lb, float lb, float* key,
                                                   float* log_gate) {
  if (has_lb) {
    *key = (1.0f - lb) * GateSigmoid<kFast>(-f);
    *log_gate = GateLog<kFast>(lb + (1.0f - lb) * GateSigmoid<kFast>(f));
  } else {
    *key = GateSigmoid<kFast>(-f);
    *log_gate = GateLogSigmoid<kFast>(f);
  }
}

// TNL's q and k channel c of one (row, head) from their activated values: with LRPE
// (lrpe) [x cos θt, x sin θt] over the two halves of width e, the angle in double (θ·t
// reaches 1e4 and more on long contexts); without it x, and zeros in a second half when
// dk > e. Stored as T (bf16: the fp32 value rounded to nearest).
template <typename T>
__device__ __forceinline__ void TnlQk(float qv, float kv, bool lrpe, float theta, int64_t position,
                                      int e, int dk, int c, T* q, T* k) {
  if (lrpe) {
    double sn, cs;
    sincos(static_cast<double>(theta) * static_cast<double>(position), &sn, &cs);
    q[c] = FromF<T>(static_cast<float>(qv * cs));
    q[e + c] = FromF<T>(static_cast<float>(qv * sn));
    k[c] = FromF<T>(static_cast<float>(kv * cs));
    k[e + c] = FromF<T>(static_cast<float>(kv * sn));
  } else {
    q[c] = FromF<T>(qv);
    k[c] = FromF<T>(kv);
    if (dk > e) {
      q[e + c] = FromF<T>(0.0f);
      k[e + c] = FromF<T>(0.0f);
    }
  }
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_GATE_MATHS_CUH_
