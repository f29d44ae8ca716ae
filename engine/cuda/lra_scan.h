// What the LRA scan kernels compute for one scan line, as plain C++ that compiles for the
// device (lra_kernels.cu) and the host (tests/engine/lra_cuda_scan_test.cc runs it over
// lra_pass_tables.h's tables against a direct reference on the CPU, so indexing mistakes
// show without a GPU). No CUDA headers.
#ifndef HGEVAL_ENGINE_CUDA_LRA_SCAN_H_
#define HGEVAL_ENGINE_CUDA_LRA_SCAN_H_

#include <cmath>
#include <cstdint>

#include "engine/model/lra_scan_step.h"

namespace hgeval::cuda {

// The lines the bidirectional scans run along: line i covers rows start[i] + s * step[i]
// for s in [0, length[i]) and writes its forward scan to output part part[i], its reverse
// scan to part[i] + 1. The launchers take device copies of these arrays.
struct LraScanLines {
  int num_lines = 0;
  const int32_t* start = nullptr;
  const int32_t* length = nullptr;
  const int32_t* step = nullptr;
  const int32_t* part = nullptr;
};

// The row of the i-th position of `line` scanned in `direction` (0 forward, 1 reverse).
HG_LRA_HD int64_t LraScanRow(const LraScanLines& lines, int line, int direction, int i) {
  const int length = lines.length[line];
  return lines.start[line] +
         static_cast<int64_t>(direction == 0 ? i : length - 1 - i) * lines.step[line];
}

// HGRN2, one (line, direction, channel ch): the state column S[:, b] of ch's head (b = ch
// mod e) in `s` (e entries, kMaxE >= e so that a kernel keeps it in registers), S_t =
// diag(gate_t) S_{t-1} + input_scale_t * input_t[ch], y_t[ch] = output_gate_t · S_t[:, b],
// written to parts[part][t][ch]. Tensors are [rows, d].
template <int kMaxE>
HG_LRA_HD void LraHgrn2ScanColumn(const float* gate, const float* input_scale, const float* input,
                                  const float* output_gate, int rows, int d, int e,
                                  const LraScanLines& lines, int line, int direction, int ch,
                                  float* parts) {
  const int head0 = ch / e * e;
  float* out = parts + static_cast<int64_t>(lines.part[line] + direction) * rows * d;
  float s[kMaxE];
#ifdef __CUDACC__
#pragma unroll
#endif
  for (int a = 0; a < kMaxE; ++a) s[a] = 0.0f;
  for (int i = 0; i < lines.length[line]; ++i) {
    const int64_t t = LraScanRow(lines, line, direction, i);
    out[t * d + ch] = LraHgrn2Step<kMaxE>(gate + t * d + head0, input_scale + t * d + head0,
                                          output_gate + t * d + head0, input[t * d + ch], e, s);
  }
}

// HGRN1, one (line, direction, channel c): h_t = gate_t e^{iθ} h_{t-1} + input_scale_t x_t
// with x_t = input[t][2c] + i input[t][2c + 1] (input [rows, 2d]) and θ = theta[c] of the
// direction, written as parts[part][t][c] (re) and parts[part][t][d + c] (im).
HG_LRA_HD void LraHgrn1ScanChannel(const float* gate, const float* input_scale, const float* input,
                                   const float* theta_forward, const float* theta_reverse, int rows,
                                   int d, const LraScanLines& lines, int line, int direction, int c,
                                   float* parts) {
  float* out = parts + static_cast<int64_t>(lines.part[line] + direction) * rows * 2 * d;
  const float theta = direction == 0 ? theta_forward[c] : theta_reverse[c];
  const float cos_t = cosf(theta), sin_t = sinf(theta);
  float re = 0.0f, im = 0.0f;
  for (int i = 0; i < lines.length[line]; ++i) {
    const int64_t t = LraScanRow(lines, line, direction, i);
    LraHgrn1Step(gate[t * d + c], cos_t, sin_t, input_scale[t * d + c], input[t * 2 * d + 2 * c],
                 input[t * 2 * d + 2 * c + 1], &re, &im);
    out[t * 2 * d + c] = re;
    out[t * 2 * d + d + c] = im;
  }
}

// Mean pooling, one (document j, channel c): the mean of x[row0[j] + r][c] for r <
// pool[j], summed in double in row order, written to pooled[doc_index[j]][c].
HG_LRA_HD void LraMeanPoolChannel(const float* x, int d, const int32_t* row0, const int32_t* pool,
                                  const int32_t* doc_index, int j, int c, float* pooled) {
  const int n = pool[j];
  const float* column = x + static_cast<int64_t>(row0[j]) * d + c;
  double sum = 0.0;
  for (int r = 0; r < n; ++r) sum += column[static_cast<int64_t>(r) * d];
  pooled[static_cast<int64_t>(doc_index[j]) * d + c] = static_cast<float>(sum / n);
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_LRA_SCAN_H_
