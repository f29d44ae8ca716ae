// The one-token recurrent step (decode) of the gated linear attention shared by HGRN2,
// GLA and TNL: S = diag(decay) S + k vᵀ, o = scale · Sᵀ q per (row, head); and HGRN2's
// fused form: gate maths from the fused projection, the state update, the output and
// g_norm (an RMSNorm over all heads) in one kernel, the heads of a row as one thread-block
// cluster summing the norm's squares across its blocks (distributed shared memory, fixed
// order).
#include <cooperative_groups.h>

#include <algorithm>

#include "engine/cuda/kernel_util.cuh"
#include "engine/cuda/programmatic_launch.cuh"

namespace hgeval::cuda {
namespace {

namespace cg = cooperative_groups;

// HGRN2's gate maths for head h of one fused projection row [q | f | i] (D = heads * dk):
// q = silu(q), k = (1 - lb) sigmoid(-f), decay = lb + (1 - lb) sigmoid(f).
__device__ __forceinline__ void Hgrn2HeadGates(const float* prow, const float* lower_bound, int h,
                                               int dk, int dim, float* sq, float* sk, float* sd) {
  for (int kk = threadIdx.x; kk < dk; kk += blockDim.x) {
    const int c = h * dk + kk;
    const float f = prow[dim + c];
    const float lb = lower_bound ? lower_bound[c] : 0.0f;
    sq[kk] = Silu(prow[c]);
    sk[kk] = (1.0f - lb) * Sigmoid(-f);
    sd[kk] = lb + (1.0f - lb) * Sigmoid(f);
  }
}

// One head's step once sq, sk, sd (dk each, shared memory) are in place: S [dk, dv] is
// updated in place and out[c] = scale · (Sᵀ q)[c] for the dv columns (v: the head's dv
// values). Threads: vthreads value columns x kgroups key-row groups; the groups' partial
// outputs (part: [kgroups][vthreads]) are summed in a fixed order.
__device__ __forceinline__ void StepHead(float* S, int dk, int dv, const float* sq, const float* sk,
                                         const float* sd, const float* v, float scale, int kgroups,
                                         float* part, float* out) {
  const int vthreads = blockDim.x / kgroups;
  const int tv = threadIdx.x % vthreads, kg = threadIdx.x / vthreads;
  for (int vb = 0; vb < dv; vb += vthreads) {
    const int vcol = vb + tv;
    float acc = 0.0f;
    if (vcol < dv) {
      const float vv = v[vcol];
      // Batches of 8 state loads in flight before their stores (the stores would
      // otherwise serialise the next loads).
      constexpr int kBatch = 8;
      for (int kb = kg; kb < dk; kb += kBatch * kgroups) {
        float sv[kBatch];
#pragma unroll
        for (int x = 0; x < kBatch; ++x) {
          const int kk = kb + x * kgroups;
          sv[x] = kk < dk ? S[static_cast<int64_t>(kk) * dv + vcol] : 0.0f;
        }
#pragma unroll
        for (int x = 0; x < kBatch; ++x) {
          const int kk = kb + x * kgroups;
          if (kk < dk) {
            const float s = fmaf(sv[x], sd[kk], sk[kk] * vv);
            S[static_cast<int64_t>(kk) * dv + vcol] = s;
            acc = fmaf(s, sq[kk], acc);
          }
        }
      }
    }
    part[kg * vthreads + tv] = acc;
    __syncthreads();
    if (kg == 0 && vcol < dv) {
      float sum = 0.0f;
      for (int x = 0; x < kgroups; ++x) sum += part[x * vthreads + tv];
      out[vcol] = scale * sum;
    }
    __syncthreads();
  }
}

// Grid (rows, H). When `hgrn2_proj` is set (HGRN2 decode), q, k, the decay and v come from
// the fused projection row [q | f | i] (gate maths in fp32) instead of q/k/g/v.
__global__ void RecurrentStepKernel(const float* q, const float* k, const float* g, const float* v,
                                    int heads, int dk, int dv, float scale,
                                    float* const* state_ptrs, int64_t layer_offset, float* o,
                                    int kgroups, const float* hgrn2_proj,
                                    const float* lower_bound) {
  extern __shared__ float smem[];
  float* sq = smem;
  float* sk = sq + dk;
  float* sd = sk + dk;
  float* part = sd + dk;  // [kgroups][vthreads]
  StartAfterPrerequisites();
  const int r = blockIdx.x, h = blockIdx.y;
  float* base = state_ptrs[r];
  if (base == nullptr) return;
  float* S = base + layer_offset + static_cast<int64_t>(h) * dk * dv;
  const int64_t qoff = (static_cast<int64_t>(r) * heads + h) * dk;
  const int64_t voff = (static_cast<int64_t>(r) * heads + h) * dv;
  const int dim = heads * dk;
  const float* prow = hgrn2_proj ? hgrn2_proj + static_cast<int64_t>(r) * 3 * dim : nullptr;
  if (prow) {
    Hgrn2HeadGates(prow, lower_bound, h, dk, dim, sq, sk, sd);
  } else {
    for (int kk = threadIdx.x; kk < dk; kk += blockDim.x) {
      sq[kk] = q[qoff + kk];
      sk[kk] = k[qoff + kk];
      sd[kk] = expf(g[qoff + kk]);
    }
  }
  __syncthreads();
  StepHead(S, dk, dv, sq, sk, sd, prow ? prow + 2 * dim + h * dv : v + voff, scale, kgroups, part,
           o + voff);
}

// Clusters of more than 8 blocks are a Hopper extension ("non-portable"), up to 16.
constexpr int kMaxClusterHeads = 16;

// Grid (rows, heads), clusters (1, heads): one cluster per row, one block per head;
// threads as RecurrentStepKernel's. Padding rows (null state) leave with their whole
// cluster, so the cluster barriers below are reached by all of its blocks or none.
template <typename T>
__global__ void Hgrn2StepNormKernel(const float* __restrict__ qfi,
                                    const float* __restrict__ lower_bound, int heads, int dk,
                                    float scale, float* const* state_ptrs, int64_t layer_offset,
                                    const float* __restrict__ norm_w, float eps, int kgroups,
                                    T* __restrict__ out) {
  extern __shared__ float smem[];
  const int vthreads = blockDim.x / kgroups;
  float* sq = smem;
  float* sk = sq + dk;
  float* sd = sk + dk;
  float* so = sd + dk;                     // [dk] this head's output
  float* part = so + dk;                   // [kgroups][vthreads]
  float* ssq = part + kgroups * vthreads;  // [1] this head's sum of squares
  float* scratch = ssq + 1;                // [32] BlockSum
  const int r = blockIdx.x, h = blockIdx.y;
  float* base = state_ptrs[r];
  if (base == nullptr) return;
  const int dv = dk;
  float* S = base + layer_offset + static_cast<int64_t>(h) * dk * dv;
  const int dim = heads * dk;
  const float* prow = qfi + static_cast<int64_t>(r) * 3 * dim;
  Hgrn2HeadGates(prow, lower_bound, h, dk, dim, sq, sk, sd);
  __syncthreads();
  StepHead(S, dk, dv, sq, sk, sd, prow + 2 * dim + h * dv, scale, kgroups, part, so);
  float ss = 0.0f;
  for (int c = threadIdx.x; c < dv; c += blockDim.x) ss += so[c] * so[c];
  ss = BlockSum(ss, scratch);
  if (threadIdx.x == 0) *ssq = ss;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();
  // Every block sums the heads' squares in head order: the same total in each.
  float total = 0.0f;
  for (int j = 0; j < heads; ++j) total += *cluster.map_shared_rank(ssq, j);
  const float rstd = rsqrtf(total / dim + eps);
  T* orow = out + static_cast<int64_t>(r) * dim + h * dv;
  for (int c = threadIdx.x; c < dv; c += blockDim.x) {
    orow[c] = FromF<T>(so[c] * rstd * norm_w[h * dv + c]);
  }
  // No block may leave while another still reads its ssq.
  cluster.sync();
}

// Threads of a step block: a value column each (up to 512), times key-row groups up to
// 512 threads.
struct StepThreads {
  explicit StepThreads(int dv)
      : vthreads(((std::min(dv, 512) + 31) / 32) * 32),
        kgroups(std::max(1, std::min(8, 512 / vthreads))) {}
  int vthreads, kgroups;
};

}  // namespace

cudaError_t RecurrentGlaStep(const float* q, const float* k, const float* g, const float* v,
                             int rows, int heads, int dk, int dv, float scale,
                             float* const* state_ptrs, int64_t layer_offset, float* o,
                             cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  dim3 grid(rows, heads);
  const StepThreads t(dv);
  const size_t smem = sizeof(float) * (3 * dk + t.kgroups * t.vthreads);
  return LaunchMaybeProgrammatic(RecurrentStepKernel, grid, t.vthreads * t.kgroups, smem, stream, q,
                                 k, g, v, heads, dk, dv, scale, state_ptrs, layer_offset, o,
                                 t.kgroups, nullptr, nullptr);
}

cudaError_t Hgrn2DecodeStep(const float* qfi, const float* lower_bound, int rows, int heads,
                            int head_dim, float scale, float* const* state_ptrs,
                            int64_t layer_offset, float* o, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  dim3 grid(rows, heads);
  const int dv = head_dim;
  const StepThreads t(dv);
  const size_t smem = sizeof(float) * (3 * head_dim + t.kgroups * t.vthreads);
  return LaunchMaybeProgrammatic(RecurrentStepKernel, grid, t.vthreads * t.kgroups, smem, stream,
                                 nullptr, nullptr, nullptr, nullptr, heads, head_dim, dv, scale,
                                 state_ptrs, layer_offset, o, t.kgroups, qfi, lower_bound);
}

bool Hgrn2DecodeStepNormFused(int heads) { return heads >= 1 && heads <= kMaxClusterHeads; }

cudaError_t Hgrn2DecodeStepNorm(const float* qfi, const float* lower_bound, int rows, int heads,
                                int head_dim, float scale, float* const* state_ptrs,
                                int64_t layer_offset, const float* norm_w, float eps, bool fuse,
                                float* o_scratch, void* out, Act out_act, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (!fuse || !Hgrn2DecodeStepNormFused(heads)) {
    // Unfused, or more heads than a cluster holds: the step, then g_norm over the row.
    cudaError_t err = Hgrn2DecodeStep(qfi, lower_bound, rows, heads, head_dim, scale, state_ptrs,
                                      layer_offset, o_scratch, stream);
    if (err != cudaSuccess) return err;
    const int dim = heads * head_dim;
    return RmsNormGated(o_scratch, dim, nullptr, 0, norm_w, eps, rows, dim, dim, out, out_act, dim,
                        stream);
  }
  const int dv = head_dim;
  const StepThreads t(dv);
  const size_t smem = sizeof(float) * (4 * head_dim + t.kgroups * t.vthreads + 1 + 32);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(rows, heads);
  config.blockDim = dim3(t.vthreads * t.kgroups);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 1;
  attr[0].val.clusterDim.y = heads;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = 1;
  HG_DISPATCH_ACT(out_act, {
    if (heads > 8) {
      // A function attribute, not stream work: set outside graph capture (the first,
      // eager decode step runs before the capture).
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      cudaStreamIsCapturing(stream, &capturing);
      if (capturing == cudaStreamCaptureStatusNone) {
        cudaError_t err = cudaFuncSetAttribute(Hgrn2StepNormKernel<T>,
                                               cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
        if (err != cudaSuccess) return err;
      }
    }
    cudaError_t err = cudaLaunchKernelEx(&config, Hgrn2StepNormKernel<T>, qfi, lower_bound, heads,
                                         head_dim, scale, state_ptrs, layer_offset, norm_w, eps,
                                         t.kgroups, static_cast<T*>(out));
    if (err != cudaSuccess) return err;
  });
  return cudaGetLastError();
}

}  // namespace hgeval::cuda
