// Row-major GEMM helpers over cuBLAS. bf16 operands accumulate in fp32; fp32 operands
// use plain fp32 (no TF32). Each output element's reduction order depends only on the
// problem shape, so a row's result never depends on the other rows' values.
#ifndef HGEVAL_ENGINE_CUDA_GEMM_H_
#define HGEVAL_ENGINE_CUDA_GEMM_H_

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/kernels.h"

namespace hgeval::cuda {

struct MatRef {
  const void* ptr = nullptr;
  Act act = Act::kF32;
  int64_t ld = 0;  // row stride in elements
};

// C[M, N] = alpha * A[M, K] · W[N, K]^T + beta * C  (W as nn.Linear stores it).
absl::Status GemmNT(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w,
                    void* c, Act c_act, int64_t ldc, float alpha = 1.0f, float beta = 0.0f);

// Strided batched forms (batch b at ptr + b * stride elements).
// C_b[M, N] = alpha * A_b[M, K] · B_b[N, K]^T.
absl::Status GemmNTBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch, float alpha);
// C_b[M, N] = A_b[M, K] · B_b[K, N].
absl::Status GemmNNBatched(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, MatRef a,
                           int64_t stride_a, MatRef b, int64_t stride_b, void* c, Act c_act,
                           int64_t ldc, int64_t stride_c, int batch);

// Row-major C[M, N] = A[M, K] · W[N, K]^T through cuBLASLt with one algorithm pinned per
// call site (N, K, dtypes, leading dimensions, alignments) and reused for every M. The
// algorithm is chosen once for a large representative M among those that need no
// workspace and no split-K reduction (so no stream-K fix-up either): every output row is
// then computed by the same kernel with the same K order whatever M is and wherever the
// row sits. That makes packed batches batch-invariant: a row's result never depends on
// how many rows, or which, were packed with it.
class PinnedGemm {
 public:
  static absl::StatusOr<std::unique_ptr<PinnedGemm>> Create(int64_t representative_m);
  ~PinnedGemm();
  PinnedGemm(const PinnedGemm&) = delete;
  PinnedGemm& operator=(const PinnedGemm&) = delete;

  // beta 1 (fp32 C): C += A · W^T in the epilogue, in place. beta is not part of the site
  // and the heuristic never sees it, so the site's algorithm (and K order) is the same,
  // and each element is the product's fp32 sum plus C rounded once: bitwise a beta = 0
  // call followed by an fp32 add (pinned_gemm_gpu_test).
  absl::Status Run(cudaStream_t stream, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w,
                   void* c, Act c_act, int64_t ldc, float beta = 0.0f);

  // Call sites (distinct pinned algorithms) seen so far.
  size_t pinned_count() const { return algos_.size(); }

 private:
  struct Site {
    int64_t n, k, lda, ldw, ldc;
    int a_act, c_act, align_a, align_w, align_c;
    bool operator==(const Site&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Site& s) {
      return H::combine(std::move(h), s.n, s.k, s.lda, s.ldw, s.ldc, s.a_act, s.c_act, s.align_a,
                        s.align_w, s.align_c);
    }
  };
  PinnedGemm() = default;
  absl::StatusOr<cublasLtMatmulAlgo_t> Pick(const Site& site);
  // The first heuristic candidate for M = rep_m that needs no workspace and no split-K
  // and also runs at M = 1; `candidates` receives how many the heuristic offered.
  absl::StatusOr<cublasLtMatmulAlgo_t> PickFor(const Site& site, int64_t rep_m, int* candidates);

  cublasLtHandle_t handle_ = nullptr;
  int64_t representative_m_ = 0;
  absl::flat_hash_map<Site, cublasLtMatmulAlgo_t> algos_;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_GEMM_H_
