#include "engine/cuda/gemm.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/cuda/device.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

cudaDataType_t DataType(Act act) { return act == Act::kF32 ? CUDA_R_32F : CUDA_R_16BF; }

// fp32 operands: pedantic fp32 (never TF32). bf16 operands: fp32 accumulation.
cublasComputeType_t ComputeType(Act operands) {
  return operands == Act::kF32 ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
}

absl::Status CheckSameAct(const MatRef& a, const MatRef& b) {
  if (a.act != b.act) return absl::InternalError("GEMM operands must share a dtype");
  return absl::OkStatus();
}

}  // namespace

absl::Status GemmNT(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w,
                    void* c, Act c_act, int64_t ldc, float alpha, float beta) {
  if (m == 0 || n == 0) return absl::OkStatus();
  {
    absl::Status st = CheckSameAct(a, w);
    if (!st.ok()) return st;
  }
  HG_CUBLAS_RETURN(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n),
                                static_cast<int>(m), static_cast<int>(k), &alpha, w.ptr,
                                DataType(w.act), static_cast<int>(w.ld), a.ptr, DataType(a.act),
                                static_cast<int>(a.ld), &beta, c, DataType(c_act),
                                static_cast<int>(ldc), ComputeType(a.act), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::Status GemmNTBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch, float alpha) {
  if (m == 0 || n == 0 || batch == 0) return absl::OkStatus();
  {
    absl::Status st = CheckSameAct(a, b);
    if (!st.ok()) return st;
  }
  const float beta = 0.0f;
  HG_CUBLAS_RETURN(cublasGemmStridedBatchedEx(
      handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, b.ptr, DataType(b.act), static_cast<int>(b.ld), stride_b, a.ptr,
      DataType(a.act), static_cast<int>(a.ld), stride_a, &beta, c, DataType(c_act),
      static_cast<int>(ldc), stride_c, batch, ComputeType(a.act), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::Status GemmNNBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch) {
  if (m == 0 || n == 0 || batch == 0) return absl::OkStatus();
  {
    absl::Status st = CheckSameAct(a, b);
    if (!st.ok()) return st;
  }
  const float alpha = 1.0f, beta = 0.0f;
  HG_CUBLAS_RETURN(cublasGemmStridedBatchedEx(
      handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
      static_cast<int>(k), &alpha, b.ptr, DataType(b.act), static_cast<int>(b.ld), stride_b, a.ptr,
      DataType(a.act), static_cast<int>(a.ld), stride_a, &beta, c, DataType(c_act),
      static_cast<int>(ldc), stride_c, batch, ComputeType(a.act), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

namespace {

int PointerAlignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  for (int a : {16, 8, 4}) {
    if (v % a == 0) return a;
  }
  return 2;
}

// Matrix layouts and the operation descriptor of one call (M varies per call).
struct LtCall {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t w = nullptr, a = nullptr, c = nullptr;
  ~LtCall() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (w) cublasLtMatrixLayoutDestroy(w);
    if (op) cublasLtMatmulDescDestroy(op);
  }
  // Column-major view of the row-major product: C^T[N, M] = W_cm^T[N, K] · A_cm[K, M].
  absl::Status Init(int64_t m, int64_t n, int64_t k, Act a_act, int64_t lda, int64_t ldw, Act c_act,
                    int64_t ldc) {
    HG_CUBLAS_RETURN(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    HG_CUBLAS_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    HG_CUBLAS_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof(nn)));
    HG_CUBLAS_RETURN(cublasLtMatrixLayoutCreate(&w, DataType(a_act), k, n, ldw));
    HG_CUBLAS_RETURN(cublasLtMatrixLayoutCreate(&a, DataType(a_act), k, m, lda));
    HG_CUBLAS_RETURN(cublasLtMatrixLayoutCreate(&c, DataType(c_act), n, m, ldc));
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<PinnedGemm>> PinnedGemm::Create(int64_t representative_m) {
  std::unique_ptr<PinnedGemm> g(new PinnedGemm());
  HG_CUBLAS_RETURN(cublasLtCreate(&g->handle_));
  g->representative_m_ = representative_m;
  return g;
}

PinnedGemm::~PinnedGemm() {
  if (handle_) cublasLtDestroy(handle_);
}

absl::StatusOr<cublasLtMatmulAlgo_t> PinnedGemm::Pick(const Site& site) {
  // The heuristic's best candidates for the representative M may all need a workspace or
  // split-K (seen for N = 64000, K = 2048: TNL's vocabulary head); smaller Ms offer others.
  // Whichever M chose it, the algorithm is then pinned for every M of this site.
  int count = 0;
  for (int64_t m : {representative_m_, int64_t{512}, int64_t{64}}) {
    absl::StatusOr<cublasLtMatmulAlgo_t> algo = PickFor(site, m, &count);
    if (algo.ok() || m == 64) return algo;
  }
  return absl::InternalError("unreachable");
}

absl::StatusOr<cublasLtMatmulAlgo_t> PinnedGemm::PickFor(const Site& site, int64_t rep_m,
                                                         int* candidates) {
  const Act a_act = static_cast<Act>(site.a_act), c_act = static_cast<Act>(site.c_act);
  LtCall rep;
  HG_RETURN_IF_ERROR(rep.Init(rep_m, site.n, site.k, a_act, site.lda, site.ldw, c_act, site.ldc));
  cublasLtMatmulPreference_t pref = nullptr;
  HG_CUBLAS_RETURN(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = 0;
  const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  const uint32_t aw = site.align_w, aa = site.align_a, ac = site.align_c;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                       sizeof(workspace));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction,
                                       sizeof(reduction));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &aw,
                                       sizeof(aw));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &aa,
                                       sizeof(aa));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac,
                                       sizeof(ac));
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac,
                                       sizeof(ac));
  constexpr int kCandidates = 16;
  cublasLtMatmulHeuristicResult_t found[kCandidates] = {};
  int count = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle_, rep.op, rep.w, rep.a, rep.c,
                                                           rep.c, pref, kCandidates, found, &count);
  cublasLtMatmulPreferenceDestroy(pref);
  HG_CUBLAS_RETURN(st);
  *candidates = count;
  // The first candidate (best for the representative M) that also runs at M = 1 with no
  // split-K and no workspace.
  LtCall one;
  HG_RETURN_IF_ERROR(one.Init(1, site.n, site.k, a_act, site.lda, site.ldw, c_act, site.ldc));
  for (int i = 0; i < count; ++i) {
    if (found[i].state != CUBLAS_STATUS_SUCCESS || found[i].workspaceSize != 0) continue;
    int32_t splitk = 1;
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&found[i].algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk,
                                         sizeof(splitk), &written);
    if (splitk > 1) continue;
    cublasLtMatmulHeuristicResult_t check = {};
    if (cublasLtMatmulAlgoCheck(handle_, one.op, one.w, one.a, one.c, one.c, &found[i].algo,
                                &check) != CUBLAS_STATUS_SUCCESS ||
        check.workspaceSize != 0) {
      continue;
    }
    return found[i].algo;
  }
  return absl::InternalError(absl::StrCat("no batch-invariant cuBLASLt algorithm for N=", site.n,
                                          " K=", site.k, " (", count,
                                          " candidates at representative M=", rep_m, ")"));
}

absl::Status PinnedGemm::Run(cudaStream_t stream, int64_t m, int64_t n, int64_t k, MatRef a,
                             MatRef w, void* c, Act c_act, int64_t ldc, float beta) {
  if (m == 0 || n == 0) return absl::OkStatus();
  HG_RETURN_IF_ERROR(CheckSameAct(a, w));
  const Site site{n,
                  k,
                  a.ld,
                  w.ld,
                  ldc,
                  static_cast<int>(a.act),
                  static_cast<int>(c_act),
                  PointerAlignment(a.ptr),
                  PointerAlignment(w.ptr),
                  PointerAlignment(c)};
  auto it = algos_.find(site);
  if (it == algos_.end()) {
    HG_ASSIGN_OR_RETURN(cublasLtMatmulAlgo_t algo, Pick(site));
    it = algos_.emplace(site, algo).first;
  }
  LtCall call;
  HG_RETURN_IF_ERROR(call.Init(m, n, k, a.act, a.ld, w.ld, c_act, ldc));
  const float alpha = 1.0f;
  HG_CUBLAS_RETURN(cublasLtMatmul(handle_, call.op, &alpha, w.ptr, call.w, a.ptr, call.a, &beta, c,
                                  call.c, c, call.c, &it->second, nullptr, 0, stream));
  return absl::OkStatus();
}

}  // namespace hgeval::cuda
