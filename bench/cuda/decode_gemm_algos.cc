// decode_gemm_algos: how fast each cuBLASLt algorithm runs the decode step's GEMMs.
//
// A decode step multiplies kDecodeGemmMaxRows (32) rows by each weight matrix of the model
// (decode_gemm.h); at batch 1 that is a GEMV whose time is the weights' bytes over the
// achieved bandwidth. The step runs cublasGemmEx's default choice at M = 32. This tool
// times that choice and every candidate cuBLASLt's heuristic offers for the same call
// (bf16 operands, fp32 accumulate and output), cold: each call reads a different copy of
// the weights, so none comes from L2. Beside them, the engine's own decode GEMM
// (kernels_decode_gemm.h) in each of its forms at 1, 8 and 32 rows, timed the same way. It
// prints a table and writes JSON (--out).
//
// Usage: decode_gemm_algos [--shapes=6144x2048,...] [--out=FILE] [--iters=N]
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/cuda/tool_main.h"
#include "engine/cuda/decode_gemm.h"
#include "engine/cuda/device.h"
#include "engine/cuda/kernels_decode_gemm.h"
#include "engine/util/status_macros.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(std::string, shapes, "6144x2048,2048x2048,11264x2048,2048x5632,32000x2048",
          "N x K of each weight (default: HGRN2-1.3B's q|f|i, o_proj, gate|up, down, head)");
ABSL_FLAG(std::string, out, "", "JSON output path (none: table only)");
ABSL_FLAG(int, iters, 60, "timed calls per algorithm");
ABSL_FLAG(int, candidates, 32, "heuristic candidates asked of cuBLASLt per shape");

namespace {

constexpr int64_t kRows = hgeval::cuda::kDecodeGemmMaxRows;
constexpr size_t kColdBytes = size_t{512} << 20;  // weight copies cycled per shape: past L2
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

struct Shape {
  int64_t n, k;
};

// Milliseconds per call of `call(copy)` over `iters` calls, the copy index cycling.
template <typename Call>
absl::StatusOr<double> TimePerCall(int iters, int copies, cudaStream_t stream, Call call) {
  for (int i = 0; i < 3; ++i) call(i % copies);
  cudaEvent_t start, stop;
  HG_CUDA_RETURN(cudaEventCreate(&start));
  HG_CUDA_RETURN(cudaEventCreate(&stop));
  HG_CUDA_RETURN(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) call(i % copies);
  HG_CUDA_RETURN(cudaEventRecord(stop, stream));
  HG_CUDA_RETURN(cudaEventSynchronize(stop));
  float ms = 0.0f;
  HG_CUDA_RETURN(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / iters;
}

int ConfigAttr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  int32_t value = 0;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof(value), &written);
  return value;
}

// Times every shape and writes the table (and --out's JSON).
absl::Status Run(const std::vector<Shape>& shapes, int iters) {
  cudaDeviceProp prop{};
  HG_CUDA_RETURN(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream;
  HG_CUDA_RETURN(cudaStreamCreate(&stream));
  cublasHandle_t blas;
  HG_CUBLAS_RETURN(cublasCreate(&blas));
  HG_CUBLAS_RETURN(cublasSetStream(blas, stream));
  cublasLtHandle_t lt;
  HG_CUBLAS_RETURN(cublasLtCreate(&lt));
  void* workspace = nullptr;
  HG_CUDA_RETURN(cudaMalloc(&workspace, kWorkspaceBytes));

  nlohmann::json report = {{"gpu", prop.name}, {"rows", kRows}, {"iters", iters}};
  std::printf("GPU %s; M = %lld rows, bf16 x bf16 -> fp32, cold weights\n", prop.name,
              static_cast<long long>(kRows));
  for (const Shape& s : shapes) {
    const size_t w_bytes = static_cast<size_t>(s.n * s.k) * sizeof(__nv_bfloat16);
    const int copies = static_cast<int>(std::max<size_t>(2, kColdBytes / w_bytes + 1));
    std::vector<void*> w(copies);
    for (void*& p : w) {
      HG_CUDA_RETURN(cudaMalloc(&p, w_bytes));
      HG_CUDA_RETURN(cudaMemset(p, 0x3c, w_bytes));  // small finite bf16 values
    }
    void *a = nullptr, *c = nullptr;
    HG_CUDA_RETURN(cudaMalloc(&a, kRows * s.k * sizeof(__nv_bfloat16)));
    HG_CUDA_RETURN(cudaMemset(a, 0x3c, kRows * s.k * sizeof(__nv_bfloat16)));
    HG_CUDA_RETURN(cudaMalloc(&c, kRows * s.n * sizeof(float)));
    const float alpha = 1.0f, beta = 0.0f;
    const int n = static_cast<int>(s.n), k = static_cast<int>(s.k), m = static_cast<int>(kRows);

    // What the decode step runs: cublasGemmEx's default at M = 32 (gemm.cc's GemmNT).
    HG_ASSIGN_OR_RETURN(const double default_ms, TimePerCall(iters, copies, stream, [&](int i) {
                          cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w[i],
                                       CUDA_R_16BF, k, a, CUDA_R_16BF, k, &beta, c, CUDA_R_32F, n,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
                        }));
    HG_CUDA_RETURN(cudaGetLastError());
    auto tbps = [&](double ms) { return w_bytes / (ms * 1e-3) / 1e12; };
    std::printf("\n%lld x %lld (%.1f MB): cublasGemmEx default %.2f us, %.2f TB/s\n",
                static_cast<long long>(s.n), static_cast<long long>(s.k), w_bytes / 1e6,
                default_ms * 1e3, tbps(default_ms));
    nlohmann::json row = {{"n", s.n},
                          {"k", s.k},
                          {"weight_bytes", w_bytes},
                          {"default_us", default_ms * 1e3},
                          {"default_tb_s", tbps(default_ms)}};

    // The engine's decode GEMM in each form (the same bits), cold as above.
    nlohmann::json ours = nlohmann::json::array();
    struct Form {
      hgeval::cuda::DecodeGemmForm form;
      const char* name;
    };
    for (const Form f : {Form{hgeval::cuda::DecodeGemmForm::kBlock, "block"},
                         Form{hgeval::cuda::DecodeGemmForm::kStream, "stream"}}) {
      for (const int rows : {1, 8, m}) {
        HG_ASSIGN_OR_RETURN(const double ms, TimePerCall(iters, copies, stream, [&](int i) {
                              hgeval::cuda::LaunchDecodeGemmForm(f.form, stream, rows, n, k, a, k,
                                                                 w[i], k, c, true, n);
                            }));
        HG_CUDA_RETURN(cudaGetLastError());
        std::printf("  decode GEMM %-6s M = %2d: %7.2f us %5.2f TB/s\n", f.name, rows, ms * 1e3,
                    tbps(ms));
        ours.push_back({{"form", f.name}, {"m", rows}, {"us", ms * 1e3}, {"tb_s", tbps(ms)}});
      }
    }
    row["decode_gemm"] = ours;

    // cuBLASLt's candidates for the same call (column-major C^T[N, M] = W^T · A).
    cublasLtMatmulDesc_t op;
    HG_CUBLAS_RETURN(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
    HG_CUBLAS_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    HG_CUBLAS_RETURN(
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof(nn)));
    cublasLtMatrixLayout_t lw, la, lc;
    HG_CUBLAS_RETURN(cublasLtMatrixLayoutCreate(&lw, CUDA_R_16BF, k, n, k));
    HG_CUBLAS_RETURN(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, k, m, k));
    HG_CUBLAS_RETURN(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, m, n));
    cublasLtMatmulPreference_t pref;
    HG_CUBLAS_RETURN(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = kWorkspaceBytes;
    HG_CUBLAS_RETURN(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    std::vector<cublasLtMatmulHeuristicResult_t> found(absl::GetFlag(FLAGS_candidates));
    int count = 0;
    HG_CUBLAS_RETURN(cublasLtMatmulAlgoGetHeuristic(
        lt, op, lw, la, lc, lc, pref, static_cast<int>(found.size()), found.data(), &count));
    nlohmann::json algos = nlohmann::json::array();
    double best_ms = 1e30;
    for (int r = 0; r < count; ++r) {
      if (found[r].state != CUBLAS_STATUS_SUCCESS) continue;
      const cublasLtMatmulAlgo_t& algo = found[r].algo;
      const absl::StatusOr<double> timed = TimePerCall(iters, copies, stream, [&](int i) {
        cublasLtMatmul(lt, op, &alpha, w[i], lw, a, la, &beta, c, lc, c, lc, &algo, workspace,
                       kWorkspaceBytes, stream);
      });
      if (!timed.ok() || cudaGetLastError() != cudaSuccess) continue;  // a candidate that fails
      const double ms = *timed;
      best_ms = std::min(best_ms, ms);
      const int id = ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_ID);
      const int tile = ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
      const int splitk = ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
      const int reduction = ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
      const int stages = ConfigAttr(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
      std::printf(
          "  rank %2d: %7.2f us %5.2f TB/s  algo %d tile %d stages %d split-K %d "
          "reduction %d workspace %zu\n",
          r, ms * 1e3, tbps(ms), id, tile, stages, splitk, reduction, found[r].workspaceSize);
      algos.push_back({{"rank", r},
                       {"us", ms * 1e3},
                       {"tb_s", tbps(ms)},
                       {"algo_id", id},
                       {"tile_id", tile},
                       {"stages_id", stages},
                       {"splitk", splitk},
                       {"reduction_scheme", reduction},
                       {"workspace_bytes", found[r].workspaceSize}});
    }
    row["candidates"] = algos;
    if (best_ms < 1e30) {
      row["best_us"] = best_ms * 1e3;
      row["best_tb_s"] = tbps(best_ms);
      std::printf("  best %.2f us (%.2f TB/s) against the default's %.2f us\n", best_ms * 1e3,
                  tbps(best_ms), default_ms * 1e3);
    }
    report["shapes"].push_back(row);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lw);
    cublasLtMatmulDescDestroy(op);
    for (void* p : w) cudaFree(p);
    cudaFree(a);
    cudaFree(c);
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) std::ofstream(out) << report.dump(2) << "\n";
  cudaFree(workspace);
  cublasLtDestroy(lt);
  cublasDestroy(blas);
  return absl::OkStatus();
}

int ToolMain(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::vector<Shape> shapes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_shapes), ',')) {
    std::vector<std::string> nk = absl::StrSplit(s, 'x');
    Shape shape{};
    if (nk.size() != 2 || !absl::SimpleAtoi(nk[0], &shape.n) ||
        !absl::SimpleAtoi(nk[1], &shape.k) || shape.n <= 0 || shape.k <= 0) {
      std::fprintf(stderr, "--shapes: want NxK,NxK,...; got \"%s\"\n", std::string(s).c_str());
      return 2;
    }
    shapes.push_back(shape);
  }
  const absl::Status status = Run(shapes, std::max(1, absl::GetFlag(FLAGS_iters)));
  if (!status.ok()) {
    std::fprintf(stderr, "decode_gemm_algos: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return hgeval::bench::RunToolMain("decode_gemm_algos", [&] { return ToolMain(argc, argv); });
}
