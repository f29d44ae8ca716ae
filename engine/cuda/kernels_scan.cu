// Linear recurrences: chunkwise GLA (HGRN2, GLA) for prefill, its one-step form for
// decode, the HGRN1 scan and Mamba's conv + selective scan. All state maths in fp32.
#include <algorithm>

#include "engine/cuda/kernel_util.cuh"

namespace hgeval::cuda {
namespace {

constexpr int kC = kGlaChunk;

// Grid (chunks, H); threads over K.
__global__ void ChunkCumsumKernel(float* g, int tokens, int heads, int dk) {
  const int c = blockIdx.x, h = blockIdx.y;
  const int t0 = c * kC;
  const int n = min(kC, tokens - t0);
  for (int k = threadIdx.x; k < dk; k += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) {
      float* p = g + (static_cast<int64_t>(t0 + j) * heads + h) * dk + k;
      acc += *p;
      *p = acc;
    }
  }
}

constexpr int kMaxDk = 256;
constexpr int kLocalVT = 64;  // value columns per block of the local-state kernel

// Phase 1, parallel over (chunk, head, value tile): the chunk's own contribution
// U_c = sum_j (k_j * exp(G_last - G_j)) v_j^T, written to u [chunks, H, K, V].
// 256 threads: 16 value groups of 4 columns x 16 key-row groups.
__global__ void __launch_bounds__(256) ChunkLocalStateKernel(const float* k, const float* G,
                                                             const float* v, int tokens,
                                                             int heads, int dk, int dv,
                                                             float* u) {
  extern __shared__ float smem[];
  float* kd = smem;                     // [kC][dk]
  float* vt = kd + kC * dk;             // [kC][kLocalVT]
  const int c = blockIdx.x, h = blockIdx.y, v0 = blockIdx.z * kLocalVT;
  const int t0 = c * kC;
  const int n = min(kC, tokens - t0);
  const int tid = threadIdx.x;
  const int64_t glast_off = (static_cast<int64_t>(t0 + n - 1) * heads + h) * dk;
  for (int idx = tid; idx < kC * dk; idx += blockDim.x) {
    const int j = idx / dk, kk = idx - (idx / dk) * dk;
    float val = 0.0f;
    if (j < n) {
      const int64_t o = (static_cast<int64_t>(t0 + j) * heads + h) * dk + kk;
      val = k[o] * __expf(G[glast_off + kk] - G[o]);
    }
    kd[idx] = val;
  }
  for (int idx = tid; idx < kC * kLocalVT; idx += blockDim.x) {
    const int j = idx / kLocalVT, cc = idx % kLocalVT;
    vt[idx] = (j < n && v0 + cc < dv)
                  ? v[(static_cast<int64_t>(t0 + j) * heads + h) * dv + v0 + cc]
                  : 0.0f;
  }
  __syncthreads();
  const int tv = tid % 16, tk = tid / 16;
  constexpr int kRows = kMaxDk / 16;
  float acc[kRows][4];
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
#pragma unroll
    for (int x = 0; x < 4; ++x) acc[m][x] = 0.0f;
  }
  for (int j = 0; j < n; ++j) {
    const float4 vv = *reinterpret_cast<const float4*>(vt + j * kLocalVT + tv * 4);
#pragma unroll
    for (int m = 0; m < kRows; ++m) {
      const int kk = tk + 16 * m;
      if (kk < dk) {
        const float a = kd[j * dk + kk];
        acc[m][0] = fmaf(a, vv.x, acc[m][0]);
        acc[m][1] = fmaf(a, vv.y, acc[m][1]);
        acc[m][2] = fmaf(a, vv.z, acc[m][2]);
        acc[m][3] = fmaf(a, vv.w, acc[m][3]);
      }
    }
  }
  float* uc = u + (static_cast<int64_t>(c) * heads + h) * dk * dv;
#pragma unroll
  for (int m = 0; m < kRows; ++m) {
    const int kk = tk + 16 * m;
    if (kk < dk) {
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int vc = v0 + tv * 4 + x;
        if (vc < dv) uc[static_cast<int64_t>(kk) * dv + vc] = acc[m][x];
      }
    }
  }
}

// Phase 2, sequential over chunks but parallel over every state element (h, k, v):
// S_{c+1} = exp(G_last,c) S_c + U_c. In place, u[c] becomes S_c (the state before chunk
// c); `state` holds S_0 and receives the final state.
__global__ void ChunkStateScanKernel(const float* G, int tokens, int heads, int dk, int dv,
                                     float* state, float* u) {
  const int64_t per_chunk = static_cast<int64_t>(heads) * dk * dv;
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= per_chunk) return;
  const int64_t hk = e / dv;  // h * dk + k
  const int chunks = CeilDiv(tokens, kC);
  float s = state[e];
  for (int c = 0; c < chunks; ++c) {
    const int last = min(c * kC + kC, tokens) - 1;
    const float decay = __expf(G[static_cast<int64_t>(last) * heads * dk + hk]);
    float* p = u + c * per_chunk + e;
    const float local = *p;
    *p = s;
    s = fmaf(decay, s, local);
  }
  state[e] = s;
}

constexpr int kSlice = 32;
constexpr int kSlicePad = kSlice + 1;

// Grid (chunks, H), 256 threads.
__global__ void __launch_bounds__(256) ChunkOutputKernel(const float* q, const float* k,
                                                         const float* G, const float* v,
                                                         const float* chunk_states, int tokens,
                                                         int heads, int dk, int dv,
                                                         float scale, float* o) {
  extern __shared__ float smem[];
  float* A = smem;                     // [kC][kC + 1]
  float* sq = A + kC * (kC + 1);       // [kC][kSlicePad]
  float* sk = sq + kC * kSlicePad;
  float* sg = sk + kC * kSlicePad;
  float* qe = sg + kC * kSlicePad;     // [kC][dk]
  const int c = blockIdx.x, h = blockIdx.y;
  const int t0 = c * kC;
  const int n = min(kC, tokens - t0);
  const int tid = threadIdx.x;

  // Intra-chunk matrix A[i][j] = sum_k q_ik k_jk exp(G_ik - G_jk), j <= i.
  {
    const int i = tid / 4, jset = tid % 4;
    float acc[16];
#pragma unroll
    for (int m = 0; m < 16; ++m) acc[m] = 0.0f;
    for (int ks = 0; ks < dk; ks += kSlice) {
      for (int idx = tid; idx < kC * kSlice; idx += blockDim.x) {
        const int j = idx / kSlice, kk = idx % kSlice;
        float qv = 0.0f, kv = 0.0f, gv = 0.0f;
        if (j < n && ks + kk < dk) {
          const int64_t off = (static_cast<int64_t>(t0 + j) * heads + h) * dk + ks + kk;
          qv = q[off];
          kv = k[off];
          gv = G[off];
        }
        sq[j * kSlicePad + kk] = qv;
        sk[j * kSlicePad + kk] = kv;
        sg[j * kSlicePad + kk] = gv;
      }
      __syncthreads();
      const int kend = min(kSlice, dk - ks);
      for (int kk = 0; kk < kend; ++kk) {
        const float qv = sq[i * kSlicePad + kk], gi = sg[i * kSlicePad + kk];
#pragma unroll
        for (int m = 0; m < 16; ++m) {
          const int j = jset + 4 * m;
          if (j <= i) {
            acc[m] = fmaf(qv * sk[j * kSlicePad + kk], __expf(gi - sg[j * kSlicePad + kk]), acc[m]);
          }
        }
      }
      __syncthreads();
    }
#pragma unroll
    for (int m = 0; m < 16; ++m) {
      const int j = jset + 4 * m;
      A[i * (kC + 1) + j] = j <= i ? acc[m] : 0.0f;
    }
  }
  // q scaled by its decay since the chunk start.
  for (int idx = tid; idx < kC * dk; idx += blockDim.x) {
    const int i = idx / dk, kk = idx % dk;
    float val = 0.0f;
    if (i < n) {
      const int64_t off = (static_cast<int64_t>(t0 + i) * heads + h) * dk + kk;
      val = q[off] * __expf(G[off]);
    }
    qe[idx] = val;
  }
  __syncthreads();

  const int rg = tid / 64, cl = tid % 64;
  const float* S = chunk_states + (static_cast<int64_t>(c) * heads + h) * dk * dv;
  for (int vb = 0; vb < dv; vb += 64) {
    const int vcol = vb + cl;
    if (vcol >= dv) continue;
    float acc[16];
#pragma unroll
    for (int r = 0; r < 16; ++r) acc[r] = 0.0f;
    for (int kk = 0; kk < dk; ++kk) {
      const float sv = S[static_cast<int64_t>(kk) * dv + vcol];
#pragma unroll
      for (int r = 0; r < 16; ++r) acc[r] = fmaf(qe[(rg * 16 + r) * dk + kk], sv, acc[r]);
    }
    for (int j = 0; j < n; ++j) {
      const float vv = v[(static_cast<int64_t>(t0 + j) * heads + h) * dv + vcol];
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        const int i = rg * 16 + r;
        if (j <= i) acc[r] = fmaf(A[i * (kC + 1) + j], vv, acc[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < 16; ++r) {
      const int i = rg * 16 + r;
      if (i < n) o[(static_cast<int64_t>(t0 + i) * heads + h) * dv + vcol] = scale * acc[r];
    }
  }
}

// Grid (rows, H). Threads: vthreads value columns x kgroups key-row groups; the key
// groups' partial outputs are summed in a fixed order.
__global__ void RecurrentStepKernel(const float* q, const float* k, const float* g,
                                    const float* v, int heads, int dk, int dv, float scale,
                                    float* const* state_ptrs, int64_t layer_offset, float* o,
                                    int kgroups) {
  extern __shared__ float smem[];
  float* sq = smem;
  float* sk = sq + dk;
  float* sd = sk + dk;
  float* part = sd + dk;  // [kgroups][vthreads]
  const int r = blockIdx.x, h = blockIdx.y;
  float* base = state_ptrs[r];
  if (base == nullptr) return;
  float* S = base + layer_offset + static_cast<int64_t>(h) * dk * dv;
  const int64_t qoff = (static_cast<int64_t>(r) * heads + h) * dk;
  for (int kk = threadIdx.x; kk < dk; kk += blockDim.x) {
    sq[kk] = q[qoff + kk];
    sk[kk] = k[qoff + kk];
    sd[kk] = expf(g[qoff + kk]);
  }
  __syncthreads();
  const int vthreads = blockDim.x / kgroups;
  const int tv = threadIdx.x % vthreads, kg = threadIdx.x / vthreads;
  const int64_t voff = (static_cast<int64_t>(r) * heads + h) * dv;
  for (int vb = 0; vb < dv; vb += vthreads) {
    const int vcol = vb + tv;
    float acc = 0.0f;
    if (vcol < dv) {
      const float vv = v[voff + vcol];
#pragma unroll 4
      for (int kk = kg; kk < dk; kk += kgroups) {
        float* p = S + static_cast<int64_t>(kk) * dv + vcol;
        const float s = fmaf(*p, sd[kk], sk[kk] * vv);
        *p = s;
        acc = fmaf(s, sq[kk], acc);
      }
    }
    part[kg * vthreads + tv] = acc;
    __syncthreads();
    if (kg == 0 && vcol < dv) {
      float sum = 0.0f;
      for (int x = 0; x < kgroups; ++x) sum += part[x * vthreads + tv];
      o[voff + vcol] = scale * sum;
    }
    __syncthreads();
  }
}

__global__ void HgrnScanKernel(const float* ifg, int seq_len, int width,
                               float* const* state_ptrs, int64_t layer_offset, float* o) {
  const int s = blockIdx.y;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  float* base = state_ptrs[s];
  if (base == nullptr || c >= width) return;
  float* st = base + layer_offset + c;
  float hv = *st;
  for (int t = 0; t < seq_len; ++t) {
    const int64_t row = static_cast<int64_t>(s) * seq_len + t;
    const float* r = ifg + row * 3 * width;
    hv = fmaf(expf(r[width + c]), hv, r[c]);
    o[row * width + c] = hv;
  }
  *st = hv;
}

constexpr int kMaxConv = 8;

template <typename T>
__global__ void MambaConvKernel(const float* xz, int seq_len, int inner, int kconv,
                                const float* conv_w, const float* conv_b,
                                float* const* state_ptrs, int64_t layer_offset, T* out) {
  const int s = blockIdx.y;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  float* base = state_ptrs[s];
  if (base == nullptr || e >= inner) return;
  float* st = base + layer_offset + static_cast<int64_t>(e) * (kconv - 1);
  float w[kMaxConv], prev[kMaxConv];
#pragma unroll
  for (int j = 0; j < kMaxConv; ++j) {
    w[j] = j < kconv ? conv_w[static_cast<int64_t>(e) * kconv + j] : 0.0f;
    prev[j] = j < kconv - 1 ? st[j] : 0.0f;
  }
  const float b = conv_b ? conv_b[e] : 0.0f;
  for (int t = 0; t < seq_len; ++t) {
    const int64_t row = static_cast<int64_t>(s) * seq_len + t;
    const float x = xz[row * 2 * inner + e];
    float acc = b;
#pragma unroll
    for (int j = 0; j < kMaxConv - 1; ++j) {
      if (j < kconv - 1) acc = fmaf(w[j], prev[j], acc);
    }
    acc = fmaf(w[kconv - 1], x, acc);
    out[row * inner + e] = FromF<T>(Silu(acc));
#pragma unroll
    for (int j = 0; j < kMaxConv - 1; ++j) {
      if (j < kconv - 2) prev[j] = prev[j + 1];
    }
    if (kconv >= 2) {
#pragma unroll
      for (int j = 0; j < kMaxConv - 1; ++j) {
        if (j == kconv - 2) prev[j] = x;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kMaxConv - 1; ++j) {
    if (j < kconv - 1) st[j] = prev[j];
  }
}

constexpr int kMaxState = 16;

template <typename T>
__global__ void MambaScanKernel(const float* x, const float* dt_raw, const float* dt_bias,
                                const float* xdbc, int64_t xdbc_ld, int bc_off, const float* xz,
                                const float* a_neg, const float* d_skip, int seq_len, int inner,
                                int nstate, float* const* state_ptrs, int64_t layer_offset,
                                T* y) {
  const int s = blockIdx.y;
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  float* base = state_ptrs[s];
  if (base == nullptr || e >= inner) return;
  float* st = base + layer_offset + static_cast<int64_t>(e) * nstate;
  float hs[kMaxState], a[kMaxState];
#pragma unroll
  for (int n = 0; n < kMaxState; ++n) {
    hs[n] = n < nstate ? st[n] : 0.0f;
    a[n] = n < nstate ? a_neg[static_cast<int64_t>(e) * nstate + n] : 0.0f;
  }
  const float bias = dt_bias[e], dsk = d_skip[e];
  for (int t = 0; t < seq_len; ++t) {
    const int64_t row = static_cast<int64_t>(s) * seq_len + t;
    const float dt = Softplus(dt_raw[row * inner + e] + bias);
    const float xv = x[row * inner + e];
    const float* bc = xdbc + row * xdbc_ld + bc_off;
    float acc = 0.0f;
#pragma unroll
    for (int n = 0; n < kMaxState; ++n) {
      if (n < nstate) {
        const float bn = bc[n], cn = bc[nstate + n];
        hs[n] = fmaf(expf(dt * a[n]), hs[n], dt * bn * xv);
        acc = fmaf(hs[n], cn, acc);
      }
    }
    acc = fmaf(dsk, xv, acc);
    const float z = xz[row * 2 * inner + inner + e];
    y[row * inner + e] = FromF<T>(acc * Silu(z));
  }
#pragma unroll
  for (int n = 0; n < kMaxState; ++n) {
    if (n < nstate) st[n] = hs[n];
  }
}

size_t LocalStateSmem(int dk) { return sizeof(float) * (kC * dk + kC * kLocalVT); }
size_t OutputSmem(int dk) {
  return sizeof(float) * (kC * (kC + 1) + 3 * kC * kSlicePad + kC * dk);
}

}  // namespace

cudaError_t ChunkLocalCumsum(float* g, int tokens, int heads, int dk, cudaStream_t stream) {
  if (tokens == 0) return cudaSuccess;
  dim3 grid(CeilDiv(tokens, kC), heads);
  ChunkCumsumKernel<<<grid, dk < 256 ? ((dk + 31) / 32) * 32 : 256, 0, stream>>>(g, tokens,
                                                                                 heads, dk);
  return cudaGetLastError();
}

cudaError_t ChunkGlaStates(const float* k, const float* G, const float* v, int tokens,
                           int heads, int dk, int dv, float* state, float* chunk_states,
                           cudaStream_t stream) {
  if (tokens == 0) return cudaSuccess;
  if (dk > kMaxDk) return cudaErrorInvalidValue;
  const size_t smem = LocalStateSmem(dk);
  cudaError_t err = cudaFuncSetAttribute(ChunkLocalStateKernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  dim3 grid(CeilDiv(tokens, kC), heads, CeilDiv(dv, kLocalVT));
  ChunkLocalStateKernel<<<grid, 256, smem, stream>>>(k, G, v, tokens, heads, dk, dv,
                                                     chunk_states);
  err = cudaGetLastError();
  if (err != cudaSuccess) return err;
  const int64_t elems = static_cast<int64_t>(heads) * dk * dv;
  ChunkStateScanKernel<<<CeilDiv(elems, 256), 256, 0, stream>>>(G, tokens, heads, dk, dv, state,
                                                                 chunk_states);
  return cudaGetLastError();
}

cudaError_t ChunkGlaOutput(const float* q, const float* k, const float* G, const float* v,
                           const float* chunk_states, int tokens, int heads, int dk, int dv,
                           float scale, float* o, cudaStream_t stream) {
  if (tokens == 0) return cudaSuccess;
  if (dk > kMaxDk) return cudaErrorInvalidValue;
  const size_t smem = OutputSmem(dk);
  cudaError_t err = cudaFuncSetAttribute(ChunkOutputKernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(smem));
  if (err != cudaSuccess) return err;
  dim3 grid(CeilDiv(tokens, kC), heads);
  ChunkOutputKernel<<<grid, 256, smem, stream>>>(q, k, G, v, chunk_states, tokens, heads, dk,
                                                 dv, scale, o);
  return cudaGetLastError();
}

cudaError_t RecurrentGlaStep(const float* q, const float* k, const float* g, const float* v,
                             int rows, int heads, int dk, int dv, float scale,
                             float* const* state_ptrs, int64_t layer_offset, float* o,
                             cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  dim3 grid(rows, heads);
  const int vthreads = ((std::min(dv, 512) + 31) / 32) * 32;
  const int kgroups = std::max(1, std::min(8, 512 / vthreads));
  const size_t smem = sizeof(float) * (3 * dk + kgroups * vthreads);
  RecurrentStepKernel<<<grid, vthreads * kgroups, smem, stream>>>(
      q, k, g, v, heads, dk, dv, scale, state_ptrs, layer_offset, o, kgroups);
  return cudaGetLastError();
}

cudaError_t HgrnScan(const float* ifg, int num_seqs, int seq_len, int width,
                     float* const* state_ptrs, int64_t layer_offset, float* o,
                     cudaStream_t stream) {
  if (num_seqs == 0 || seq_len == 0) return cudaSuccess;
  dim3 grid(CeilDiv(width, 128), num_seqs);
  HgrnScanKernel<<<grid, 128, 0, stream>>>(ifg, seq_len, width, state_ptrs, layer_offset, o);
  return cudaGetLastError();
}

cudaError_t MambaConv(const float* xz, int num_seqs, int seq_len, int inner, int kconv,
                      const float* conv_w, const float* conv_b, float* const* state_ptrs,
                      int64_t layer_offset, void* out, Act act, cudaStream_t stream) {
  if (num_seqs == 0 || seq_len == 0) return cudaSuccess;
  if (kconv < 1 || kconv > kMaxConv) return cudaErrorInvalidValue;
  dim3 grid(CeilDiv(inner, 128), num_seqs);
  HG_DISPATCH_ACT(act, MambaConvKernel<T><<<grid, 128, 0, stream>>>(
                           xz, seq_len, inner, kconv, conv_w, conv_b, state_ptrs, layer_offset,
                           static_cast<T*>(out)));
  return cudaGetLastError();
}

cudaError_t MambaScan(const float* x, const float* dt_raw, const float* dt_bias, const float* xdbc,
                      int64_t xdbc_ld, int bc_off, const float* xz, const float* a_neg,
                      const float* d_skip, int num_seqs, int seq_len, int inner, int nstate,
                      float* const* state_ptrs, int64_t layer_offset, void* y, Act act,
                      cudaStream_t stream) {
  if (num_seqs == 0 || seq_len == 0) return cudaSuccess;
  if (nstate > kMaxState) return cudaErrorInvalidValue;
  dim3 grid(CeilDiv(inner, 128), num_seqs);
  HG_DISPATCH_ACT(act, MambaScanKernel<T><<<grid, 128, 0, stream>>>(
                           x, dt_raw, dt_bias, xdbc,
                           xdbc_ld, bc_off, xz, a_neg, d_skip, seq_len, inner, nstate,
                           state_ptrs, layer_offset, static_cast<T*>(y)));
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
