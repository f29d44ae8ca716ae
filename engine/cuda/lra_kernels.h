// Launchers for the LRA classifiers' kernels (lra_kernels.cu; engine/cuda/lra_classifier.cc
// runs them). fp32 throughout. Rows are positions of a packed batch of documents; every
// kernel computes a row, a (row, channel) or one scan line from that document's data only,
// with a fixed order of operations, so a document's results never depend on the others.
#ifndef HGEVAL_ENGINE_CUDA_LRA_KERNELS_H_
#define HGEVAL_ENGINE_CUDA_LRA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/cuda/lra_scan.h"

namespace hgeval::cuda {

// The largest HGRN2 head size (expand_ratio) the scan kernel holds in registers.
constexpr int kMaxLraHeadSize = 128;

// c[m, n] (row stride ldc) = a[m, k] (lda) · w[n, k]^T (ldw), fp32, each output summed over
// k in order by one thread: the fallback for a projection the pinned cuBLASLt GEMM has no
// algorithm for (a function of the shape only, so still batch-invariant).
cudaError_t LraLinear(const float* a, int64_t lda, const float* w, int64_t ldw, int64_t m, int n,
                      int k, float* c, int64_t ldc, cudaStream_t stream);

// y = LayerNorm(x) * w + b per row of `width` (mean and variance in double, like the CPU
// backend), or, when running_mean is not null, eval-mode BatchNorm
// (x - mean) / sqrt(var + eps) * w + b. y may be x.
cudaError_t LraNorm(const float* x, int rows, int width, const float* w, const float* b,
                    const float* running_mean, const float* running_var, float eps, float* y,
                    cudaStream_t stream);

// x[r, :] += table[position[r], :] (the sinusoidal position table, [max_positions, d]).
cudaError_t LraAddPositions(float* x, const int32_t* position, int rows, int d, const float* table,
                            cudaStream_t stream);

// The lower-bounded forget gate (fla's rule, in double as on the CPU) from the
// pre-activations f (row stride f_ld): gate = lb + (1 - lb) sigmoid(f) and
// input_scale = 1 - gate, [rows, width]; lower_bound null: lb = 0.
cudaError_t LraForgetGates(const float* f, int64_t f_ld, int rows, int width,
                           const float* lower_bound, float* gate, float* input_scale,
                           cudaStream_t stream);

// HGRN2's input and output gate from in_proj's output feature [rows, 3d]:
// input = silu(feature[:, :d]), output_gate = sigmoid(feature[:, d:2d]).
cudaError_t LraHgrn2Inputs(const float* feature, int rows, int d, float* input, float* output_gate,
                           cudaStream_t stream);

// HGRN2's bidirectional scans, per head of size e (d = heads * e): along each line and
// direction S_t = diag(gate_t) S_{t-1} + input_scale_t ⊗ input_t (the state starting at
// zero, including the current position), y_t = output_gate_t · S_t. parts
// [num_parts][rows][d] receives each direction's y.
cudaError_t LraHgrn2Scan(const float* gate, const float* input_scale, const float* input,
                         const float* output_gate, int rows, int d, int e,
                         const LraScanLines& lines, float* parts, cudaStream_t stream);

// HGRN1's bidirectional complex scans: per channel c, h_t = gate_t e^{iθ} h_{t-1} +
// input_scale_t (x_re + i x_im) with x from input [rows, 2d] (re, im interleaved), θ =
// theta_forward[c] forward and theta_reverse[c] in reverse. parts [num_parts][rows][2d]
// receives [re(d) | im(d)] per row.
cudaError_t LraHgrn1Scan(const float* gate, const float* input_scale, const float* input,
                         const float* theta_forward, const float* theta_reverse, int rows, int d,
                         const LraScanLines& lines, float* parts, cudaStream_t stream);

// y[i] = ((parts[0][i] + parts[1][i]) + parts[2][i]) + ... for i < n.
cudaError_t LraSumParts(const float* parts, int num_parts, int64_t n, float* y,
                        cudaStream_t stream);

// x[i] = silu(x[i]) for i < n.
cudaError_t LraSiluInPlace(float* x, int64_t n, cudaStream_t stream);
// x[i] *= silu(gate[i]) for i < n.
cudaError_t LraMulSilu(float* x, const float* gate, int64_t n, cudaStream_t stream);
// x[i] += delta[i] for i < n.
cudaError_t LraAdd(float* x, const float* delta, int64_t n, cudaStream_t stream);
// x[i] = gelu(x[i]) (the erf form) for i < n.
cudaError_t LraGeluInPlace(float* x, int64_t n, cudaStream_t stream);

// Mean pooling: pooled[doc_index[j], :] = the mean (summed in double, in row order) of
// rows [row0[j], row0[j] + pool[j]) of x [rows, d], for each document j < docs.
cudaError_t LraMeanPool(const float* x, int d, const int32_t* row0, const int32_t* pool,
                        const int32_t* doc_index, int docs, float* pooled, cudaStream_t stream);

// The retrieval head's features: for pair i, u = pooled[2i], v = pooled[2i + 1] ([d]
// each): features[i] = [u, v, u - v, u * v] ([4d]).
cudaError_t LraRetrievalFeatures(const float* pooled, int pairs, int d, float* features,
                                 cudaStream_t stream);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_LRA_KERNELS_H_
