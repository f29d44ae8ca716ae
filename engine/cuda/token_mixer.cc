#include "engine/cuda/token_mixer.h"

#include <algorithm>

#include "engine/cuda/decode_gemm.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {

absl::Status MixerPass::Linear(int64_t m, int64_t n, int64_t k, MatRef a, MatRef w, void* c,
                               Act c_act, int64_t ldc, bool accumulate) const {
  const float beta = accumulate ? 1.0f : 0.0f;
  if (!decode) return pinned->Run(stream, m, n, k, a, w, c, c_act, ldc, beta);
  // bf16: the batch-invariant skinny GEMM that streams W once (decode_gemm.h).
  if (DecodeGemmEnabled() && DecodeGemmFits(m, k, a, w)) {
    return DecodeGemmNT(stream, m, n, k, a, w, c, c_act, ldc, accumulate);
  }
  // cuBLAS always at the padded 32 rows (scratch holds them), so its kernel choice, and
  // a row's bits, never depend on how many rows the step runs.
  return GemmNT(cublas, kDecodeGemmMaxRows, n, k, a, w, c, c_act, ldc, 1.0f, beta);
}

absl::Status MixerPass::ProjectOutput(int64_t r0, int64_t m, int64_t n, int64_t k, MatRef a,
                                      MatRef w) const {
  if (residual != nullptr) {
    return Linear(m, n, k, a, w, residual + r0 * n, Act::kF32, n, /*accumulate=*/true);
  }
  return Linear(m, n, k, a, w, delta + r0 * n, Act::kF32, n);
}

absl::Status ProjectionScratch::Allocate(DeviceAllocator& alloc, int64_t model_width,
                                         int64_t projection_width, int64_t output_width,
                                         bool with_o, Act pack_proj_act) {
  d = model_width;
  proj_width = projection_width;
  out_width = output_width;
  // Packs hold proj as pack_proj_act, decode steps as fp32 (kDecodeRows rows).
  const size_t proj_bytes =
      std::max(static_cast<size_t>(kPackRows * proj_width) * ActSize(pack_proj_act),
               static_cast<size_t>(kDecodeRows * proj_width) * sizeof(float));
  HG_ASSIGN_OR_RETURN(proj, alloc.Alloc(proj_bytes));
  if (with_o) {
    HG_RETURN_IF_ERROR(alloc.Floats(&o, static_cast<size_t>(kPackRows) * out_width));
  }
  return alloc.Acts(&onorm, kPackRows * out_width);
}

absl::Status ProjectionScratch::ProjectIn(const MixerPass& pass, const DeviceBuffer& w_in, Act act,
                                          Act proj_act) const {
  return pass.Linear(pass.rows, proj_width, d, MatRef{pass.x, act, d}, MatRef{w_in.get(), act, d},
                     proj.get(), proj_act, proj_width);
}

absl::Status ProjectionScratch::ProjectOut(const MixerPass& pass, const DeviceBuffer& w_out,
                                           Act act) const {
  return pass.ProjectOutput(0, pass.rows, d, out_width, MatRef{onorm.get(), act, out_width},
                            MatRef{w_out.get(), act, out_width});
}

absl::Status ProjectionScratch::NormAndProjectOut(
    const MixerPass& pass, absl::FunctionRef<cudaError_t(int, const int32_t*)> norm,
    const DeviceBuffer& w_out, Act act) const {
  if (pass.out_count < 0) {
    HG_CUDA_RETURN(norm(pass.rows, nullptr));
    return ProjectOut(pass, w_out, act);
  }
  if (!pass.ReportsOutput()) return absl::OkStatus();
  HG_CUDA_RETURN(norm(pass.out_count, pass.out_rows));
  HG_CUDA_RETURN(GatherRows(pass.residual, pass.out_rows, pass.out_count, static_cast<int>(d),
                            pass.out_residual, Act::kF32, pass.stream));
  MixerPass rows = pass;
  rows.rows = pass.out_count;
  rows.residual = pass.out_residual;
  return ProjectOut(rows, w_out, act);
}

}  // namespace hgeval::cuda
