// A matrix product whose every output row is computed the same way whatever the number of
// rows (a row-invariant y = x·Wᵀ). A BLAS such as OpenBLAS picks kernels, edge tiles and
// thread splits by the shape of the call, so the same row rounds differently in a prefill
// of T rows and in a one-row decode step: that breaks "fork equals scratch" (≤ 1e-6 on
// log-probs that reach -20, i.e. ~1 ulp). Here each output element is a fixed 8-lane dot
// product in the same order in every tile shape, so a row's result depends only on that
// row and the weights. Every CPU model product goes through it (cpu::Linear in ops.h).
#ifndef HGEVAL_ENGINE_CPU_ROW_INVARIANT_LINEAR_H_
#define HGEVAL_ENGINE_CPU_ROW_INVARIANT_LINEAR_H_

#include <cstdint>

#include "engine/loader/checkpoint.h"

namespace hgeval::cpu {

// y[M,N] = x[M,K] · W[N,K]ᵀ (nn.Linear layout), overwriting y.
void RowInvariantLinear(const float* x, int64_t m, int64_t k, const HostTensor& weight, float* y);

// SwiGLU MLP with row-invariant products: out[M,D] = down(silu(gate(x)) * up(x)).
void RowInvariantGatedMlp(const float* x, int64_t m, const HostTensor& gate, const HostTensor& up,
                          const HostTensor& down, float* out);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_ROW_INVARIANT_LINEAR_H_
