// The LRA classifiers' kernels (launchers in lra_kernels.h). Written for exactness rather
// than speed: the scans are direct recurrences (one thread per state column and scan
// direction, over the line's positions in order), the norms and the pooling sum in double
// as the CPU backend does, and the elementwise steps use explicitly rounded operations
// where the CPU's result is plain float arithmetic.
#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/lra_kernels.h"

namespace hgeval::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kScanThreads = 128;

int GridFor(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535);
}

__device__ __forceinline__ double WarpSumDouble(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block (blockDim.x a multiple of 32) in a fixed order; every thread gets it.
__device__ double BlockSumDouble(double v, double* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = WarpSumDouble(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const double t = lane < warps ? scratch[lane] : 0.0;
  return WarpSumDouble(t);
}

constexpr int kLinearTile = 16;

// Block: a 16 x 16 tile of c; k in chunks of 16 through shared memory, each thread's sum
// in k order. Row tiles stride by gridDim.y (any m).
__global__ void LraLinearKernel(const float* a, int64_t lda, const float* w, int64_t ldw, int64_t m,
                                int n, int k, float* c, int64_t ldc) {
  __shared__ float a_tile[kLinearTile][kLinearTile + 1];
  __shared__ float w_tile[kLinearTile][kLinearTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int col = blockIdx.x * kLinearTile + tx;
  const int w_row = blockIdx.x * kLinearTile + ty;
  const int64_t row_tiles = (m + kLinearTile - 1) / kLinearTile;
  for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {
    const int64_t row = tile * kLinearTile + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += kLinearTile) {
      const int kk = k0 + tx;
      a_tile[ty][tx] = row < m && kk < k ? a[row * lda + kk] : 0.0f;
      w_tile[ty][tx] = w_row < n && kk < k ? w[static_cast<int64_t>(w_row) * ldw + kk] : 0.0f;
      __syncthreads();
      for (int j = 0; j < kLinearTile && k0 + j < k; ++j) {
        acc = fmaf(a_tile[ty][j], w_tile[tx][j], acc);
      }
      __syncthreads();
    }
    if (row < m && col < n) c[row * ldc + col] = acc;
  }
}

__global__ void LraNormKernel(const float* x, int width, const float* w, const float* b,
                              const float* running_mean, const float* running_var, float eps,
                              float* y) {
  const float* xr = x + static_cast<int64_t>(blockIdx.x) * width;
  float* yr = y + static_cast<int64_t>(blockIdx.x) * width;
  if (running_mean != nullptr) {
    for (int c = threadIdx.x; c < width; c += blockDim.x) {
      const float scale =
          __fdiv_rn(__fsub_rn(xr[c], running_mean[c]), sqrtf(__fadd_rn(running_var[c], eps)));
      yr[c] = __fadd_rn(__fmul_rn(scale, w[c]), b[c]);
    }
    return;
  }
  __shared__ double scratch[32];
  double sum = 0.0;
  for (int c = threadIdx.x; c < width; c += blockDim.x) sum += xr[c];
  const double mu = BlockSumDouble(sum, scratch) / width;
  double sq = 0.0;
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    const double centred = xr[c] - mu;
    sq += centred * centred;
  }
  const double inv = 1.0 / sqrt(BlockSumDouble(sq, scratch) / width + static_cast<double>(eps));
  for (int c = threadIdx.x; c < width; c += blockDim.x) {
    const float normed = static_cast<float>((xr[c] - mu) * inv);
    yr[c] = __fadd_rn(__fmul_rn(normed, w[c]), b[c]);
  }
}

__global__ void LraAddPositionsKernel(float* x, const int32_t* position, int d,
                                      const float* table) {
  float* row = x + static_cast<int64_t>(blockIdx.x) * d;
  const float* pe = table + static_cast<int64_t>(position[blockIdx.x]) * d;
  for (int c = threadIdx.x; c < d; c += blockDim.x) row[c] = __fadd_rn(row[c], pe[c]);
}

__global__ void LraForgetGatesKernel(const float* f, int64_t f_ld, int64_t total, int width,
                                     const float* lower_bound, float* gate, float* input_scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / width;
    const int c = static_cast<int>(i % width);
    const double pre = f[r * f_ld + c];
    const double lb = lower_bound != nullptr ? static_cast<double>(lower_bound[c]) : 0.0;
    const double e = exp(-fabs(pre));  // in (0, 1]: no overflow
    const double sig = pre >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    const double sig_neg = pre >= 0 ? e / (1.0 + e) : 1.0 / (1.0 + e);
    const double log_sig = fmin(pre, 0.0) - log1p(e);
    const double log_gate = lb == 0.0 ? log_sig : log(lb + (1.0 - lb) * sig);
    gate[i] = static_cast<float>(exp(log_gate));
    input_scale[i] = static_cast<float>((1.0 - lb) * sig_neg);
  }
}

__global__ void LraHgrn2InputsKernel(const float* feature, int64_t total, int d, float* input,
                                     float* output_gate) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / d;
    const int c = static_cast<int>(i % d);
    input[i] = Silu(feature[r * 3 * d + c]);
    output_gate[i] = Sigmoid(feature[r * 3 * d + d + c]);
  }
}

// Block x: (line, direction); y and thread: the channel (lra_scan.h has the body).
template <int kMaxE>
__global__ void LraHgrn2ScanKernel(const float* gate, const float* input_scale, const float* input,
                                   const float* output_gate, int rows, int d, int e,
                                   LraScanLines lines, float* parts) {
  const int ch = blockIdx.y * blockDim.x + threadIdx.x;
  if (ch >= d) return;
  LraHgrn2ScanColumn<kMaxE>(gate, input_scale, input, output_gate, rows, d, e, lines,
                            blockIdx.x >> 1, blockIdx.x & 1, ch, parts);
}

__global__ void LraHgrn1ScanKernel(const float* gate, const float* input_scale, const float* input,
                                   const float* theta_forward, const float* theta_reverse, int rows,
                                   int d, LraScanLines lines, float* parts) {
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= d) return;
  LraHgrn1ScanChannel(gate, input_scale, input, theta_forward, theta_reverse, rows, d, lines,
                      blockIdx.x >> 1, blockIdx.x & 1, c, parts);
}

__global__ void LraSumPartsKernel(const float* parts, int num_parts, int64_t n, float* y) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float sum = parts[i];
    for (int p = 1; p < num_parts; ++p) sum = __fadd_rn(sum, parts[p * n + i]);
    y[i] = sum;
  }
}

__global__ void LraSiluKernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = Silu(x[i]);
  }
}

__global__ void LraMulSiluKernel(float* x, const float* gate, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = __fmul_rn(x[i], Silu(gate[i]));
  }
}

__global__ void LraAddKernel(float* x, const float* delta, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    x[i] = __fadd_rn(x[i], delta[i]);
  }
}

__global__ void LraGeluKernel(float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float h = x[i];
    x[i] = 0.5f * h * (1.0f + erff(h / sqrtf(2.0f)));
  }
}

__global__ void LraMeanPoolKernel(const float* x, int d, const int32_t* row0, const int32_t* pool,
                                  const int32_t* doc_index, float* pooled) {
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= d) return;
  LraMeanPoolChannel(x, d, row0, pool, doc_index, blockIdx.x, c, pooled);
}

__global__ void LraRetrievalFeaturesKernel(const float* pooled, int d, float* features) {
  const int i = blockIdx.x;
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= d) return;
  const float u = pooled[(2 * static_cast<int64_t>(i)) * d + c];
  const float v = pooled[(2 * static_cast<int64_t>(i) + 1) * d + c];
  float* f = features + static_cast<int64_t>(i) * 4 * d;
  f[c] = u;
  f[d + c] = v;
  f[2 * d + c] = __fsub_rn(u, v);
  f[3 * d + c] = __fmul_rn(u, v);
}

}  // namespace

cudaError_t LraLinear(const float* a, int64_t lda, const float* w, int64_t ldw, int64_t m, int n,
                      int k, float* c, int64_t ldc, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const int64_t row_tiles = (m + kLinearTile - 1) / kLinearTile;
  const dim3 grid(CeilDiv(n, kLinearTile),
                  static_cast<unsigned>(row_tiles < 65535 ? row_tiles : 65535));
  LraLinearKernel<<<grid, dim3(kLinearTile, kLinearTile), 0, stream>>>(a, lda, w, ldw, m, n, k, c,
                                                                       ldc);
  return cudaGetLastError();
}

cudaError_t LraNorm(const float* x, int rows, int width, const float* w, const float* b,
                    const float* running_mean, const float* running_var, float eps, float* y,
                    cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  LraNormKernel<<<rows, kThreads, 0, stream>>>(x, width, w, b, running_mean, running_var, eps, y);
  return cudaGetLastError();
}

cudaError_t LraAddPositions(float* x, const int32_t* position, int rows, int d, const float* table,
                            cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  LraAddPositionsKernel<<<rows, kThreads, 0, stream>>>(x, position, d, table);
  return cudaGetLastError();
}

cudaError_t LraForgetGates(const float* f, int64_t f_ld, int rows, int width,
                           const float* lower_bound, float* gate, float* input_scale,
                           cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(rows) * width;
  if (total == 0) return cudaSuccess;
  LraForgetGatesKernel<<<GridFor(total), kThreads, 0, stream>>>(f, f_ld, total, width, lower_bound,
                                                                gate, input_scale);
  return cudaGetLastError();
}

cudaError_t LraHgrn2Inputs(const float* feature, int rows, int d, float* input, float* output_gate,
                           cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(rows) * d;
  if (total == 0) return cudaSuccess;
  LraHgrn2InputsKernel<<<GridFor(total), kThreads, 0, stream>>>(feature, total, d, input,
                                                                output_gate);
  return cudaGetLastError();
}

cudaError_t LraHgrn2Scan(const float* gate, const float* input_scale, const float* input,
                         const float* output_gate, int rows, int d, int e,
                         const LraScanLines& lines, float* parts, cudaStream_t stream) {
  if (lines.num_lines == 0 || d == 0) return cudaSuccess;
  if (e < 1 || e > kMaxLraHeadSize || d % e != 0) return cudaErrorInvalidValue;
  const dim3 grid(2 * lines.num_lines, CeilDiv(d, kScanThreads));
#define HG_LRA_SCAN(kMaxE)                                      \
  LraHgrn2ScanKernel<kMaxE><<<grid, kScanThreads, 0, stream>>>( \
      gate, input_scale, input, output_gate, rows, d, e, lines, parts)
  if (e <= 4) {
    HG_LRA_SCAN(4);
  } else if (e <= 8) {
    HG_LRA_SCAN(8);
  } else if (e <= 16) {
    HG_LRA_SCAN(16);
  } else if (e <= 32) {
    HG_LRA_SCAN(32);
  } else if (e <= 64) {
    HG_LRA_SCAN(64);
  } else {
    HG_LRA_SCAN(kMaxLraHeadSize);
  }
#undef HG_LRA_SCAN
  return cudaGetLastError();
}

cudaError_t LraHgrn1Scan(const float* gate, const float* input_scale, const float* input,
                         const float* theta_forward, const float* theta_reverse, int rows, int d,
                         const LraScanLines& lines, float* parts, cudaStream_t stream) {
  if (lines.num_lines == 0 || d == 0) return cudaSuccess;
  const dim3 grid(2 * lines.num_lines, CeilDiv(d, kScanThreads));
  LraHgrn1ScanKernel<<<grid, kScanThreads, 0, stream>>>(gate, input_scale, input, theta_forward,
                                                        theta_reverse, rows, d, lines, parts);
  return cudaGetLastError();
}

cudaError_t LraSumParts(const float* parts, int num_parts, int64_t n, float* y,
                        cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  LraSumPartsKernel<<<GridFor(n), kThreads, 0, stream>>>(parts, num_parts, n, y);
  return cudaGetLastError();
}

cudaError_t LraSiluInPlace(float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  LraSiluKernel<<<GridFor(n), kThreads, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t LraMulSilu(float* x, const float* gate, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  LraMulSiluKernel<<<GridFor(n), kThreads, 0, stream>>>(x, gate, n);
  return cudaGetLastError();
}

cudaError_t LraAdd(float* x, const float* delta, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  LraAddKernel<<<GridFor(n), kThreads, 0, stream>>>(x, delta, n);
  return cudaGetLastError();
}

cudaError_t LraGeluInPlace(float* x, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  LraGeluKernel<<<GridFor(n), kThreads, 0, stream>>>(x, n);
  return cudaGetLastError();
}

cudaError_t LraMeanPool(const float* x, int d, const int32_t* row0, const int32_t* pool,
                        const int32_t* doc_index, int docs, float* pooled, cudaStream_t stream) {
  if (docs == 0) return cudaSuccess;
  const dim3 grid(docs, CeilDiv(d, kScanThreads));
  LraMeanPoolKernel<<<grid, kScanThreads, 0, stream>>>(x, d, row0, pool, doc_index, pooled);
  return cudaGetLastError();
}

cudaError_t LraRetrievalFeatures(const float* pooled, int pairs, int d, float* features,
                                 cudaStream_t stream) {
  if (pairs == 0) return cudaSuccess;
  const dim3 grid(pairs, CeilDiv(d, kScanThreads));
  LraRetrievalFeaturesKernel<<<grid, kScanThreads, 0, stream>>>(pooled, d, features);
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
