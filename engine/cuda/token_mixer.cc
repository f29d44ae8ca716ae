#include "engine/cuda/token_mixer.h"

#include "engine/util/status_macros.h"

namespace hgeval::cuda {

absl::Status MixerPass::Linear(int64_t m, int64_t n, int64_t k, MatRef a, MatRef w, void* c,
                               Act c_act, int64_t ldc) const {
  if (decode) return GemmNT(cublas, m, n, k, a, w, c, c_act, ldc);
  return pinned->Run(stream, m, n, k, a, w, c, c_act, ldc);
}

absl::Status ProjectionScratch::Allocate(DeviceAllocator& alloc, int64_t model_width,
                                         int64_t projection_width, int64_t output_width) {
  d = model_width;
  proj_width = projection_width;
  out_width = output_width;
  const size_t R = kPackRows;
  HG_RETURN_IF_ERROR(alloc.Floats(&proj, R * proj_width));
  HG_RETURN_IF_ERROR(alloc.Floats(&o, R * out_width));
  return alloc.Acts(&onorm, R * out_width);
}

absl::Status ProjectionScratch::ProjectIn(const MixerPass& pass, const DeviceBuffer& w_in,
                                          Act act) const {
  return pass.Linear(pass.rows, proj_width, d, MatRef{pass.x, act, d}, MatRef{w_in.get(), act, d},
                     proj.get(), Act::kF32, proj_width);
}

absl::Status ProjectionScratch::ProjectOut(const MixerPass& pass, const DeviceBuffer& w_out,
                                           Act act) const {
  return pass.Linear(pass.rows, d, out_width, MatRef{onorm.get(), act, out_width},
                     MatRef{w_out.get(), act, out_width}, pass.delta, Act::kF32, d);
}

}  // namespace hgeval::cuda
