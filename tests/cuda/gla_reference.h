// The gated linear attention recurrence in float64, the GPU kernels' reference:
// S_t = diag(exp g_t) S_{t-1} + k_t v_t^T and o_t = scale S_t^T q_t per head.
#ifndef HGEVAL_TESTS_CUDA_GLA_REFERENCE_H_
#define HGEVAL_TESTS_CUDA_GLA_REFERENCE_H_

#include <cmath>
#include <cstddef>
#include <vector>

namespace hgeval::cuda {

// Rows [r0, r0 + n) of q, k, g [rows, H, dk] and v [rows, H, dv]: S [H, dk, dv] is the
// state before row r0 and becomes the state after the last; o [rows, H, dv] receives
// those rows' outputs.
inline void GlaReference(const std::vector<float>& q, const std::vector<float>& k,
                         const std::vector<float>& g, const std::vector<float>& v, int heads,
                         int dk, int dv, int r0, int n, float scale, std::vector<double>& S,
                         std::vector<double>& o) {
  for (int t = r0; t < r0 + n; ++t) {
    for (int h = 0; h < heads; ++h) {
      const size_t qo = (static_cast<size_t>(t) * heads + h) * dk;
      const size_t vo = (static_cast<size_t>(t) * heads + h) * dv;
      double* Sh = S.data() + static_cast<size_t>(h) * dk * dv;
      for (int a = 0; a < dk; ++a) {
        const double dec = std::exp(static_cast<double>(g[qo + a]));
        for (int b = 0; b < dv; ++b) {
          Sh[a * dv + b] = dec * Sh[a * dv + b] + static_cast<double>(k[qo + a]) * v[vo + b];
        }
      }
      for (int b = 0; b < dv; ++b) {
        double acc = 0;
        for (int a = 0; a < dk; ++a) acc += Sh[a * dv + b] * q[qo + a];
        o[vo + b] = scale * acc;
      }
    }
  }
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_TESTS_CUDA_GLA_REFERENCE_H_
