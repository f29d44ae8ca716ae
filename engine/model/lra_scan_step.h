// One position of the LRA classifiers' bidirectional scans (docs/lra.md), the arithmetic
// both backends run: the CPU's scan loops (engine/cpu/lra_classifier.cc) and the CUDA
// scan kernels (engine/cuda/lra_scan.h) call these, so the two compute each state the
// same way. Plain C++ that nvcc also compiles for the device; no other includes.
#ifndef HGEVAL_ENGINE_MODEL_LRA_SCAN_STEP_H_
#define HGEVAL_ENGINE_MODEL_LRA_SCAN_STEP_H_

#ifdef __CUDACC__
#define HG_LRA_HD __host__ __device__ __forceinline__
#else
#define HG_LRA_HD inline
#endif

namespace hgeval {

// HGRN2, one state column S[:, b] of a head of size e (`column`, e entries): S[a, b] =
// gate[a] S[a, b] + input_scale[a] v_b, then returns Σ_a output_gate[a] S[a, b] (a in
// order). kUnroll > 0 (>= e) unrolls the loop so that a kernel keeps the column in
// registers; 0 loops to e.
template <int kUnroll>
HG_LRA_HD float LraHgrn2Step(const float* gate, const float* input_scale, const float* output_gate,
                             float v, int e, float* column) {
  const int n = kUnroll > 0 ? kUnroll : e;
  float acc = 0.0f;
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int a = 0; a < n; ++a) {
    if (a < e) {
      column[a] = gate[a] * column[a] + input_scale[a] * v;
      acc += output_gate[a] * column[a];
    }
  }
  return acc;
}

// HGRN1, one channel's complex state h = (re, im): h = gate e^{iθ} h + input_scale x with
// x = x_re + i x_im, θ given as its cosine and sine.
HG_LRA_HD void LraHgrn1Step(float gate, float cos_theta, float sin_theta, float input_scale,
                            float x_re, float x_im, float* re, float* im) {
  const float gr = gate * cos_theta, gi = gate * sin_theta;
  const float xr = input_scale * x_re;
  const float xi = input_scale * x_im;
  const float nr = gr * *re - gi * *im + xr;
  const float ni = gr * *im + gi * *re + xi;
  *re = nr;
  *im = ni;
}

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_LRA_SCAN_STEP_H_
