// HGRN (HGRN1: fla models/hgrn, layers/hgrn.py; specs/models.md §3) on the GPU: the fused
// i | f | g projection, the lower-bounded gates, the per-channel scan, the gated g_norm
// and o_proj. The CPU's forward pass: engine/cpu/hgrn1.cc.
#include <memory>
#include <vector>

#include "engine/cuda/cuda_mixers.h"
#include "engine/cuda/lower_bounds.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

class HgrnMixer final : public CudaTokenMixer {
 public:
  HgrnMixer(const ModelConfig& c, Act act)
      : config_(c), act_(act), width_(c.hidden_size * c.expand_ratio) {}

  absl::Status Load(const Checkpoint& ck, const BlockTensorNames& names,
                    DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size, L = config_.num_layers, E = width_;
    HG_ASSIGN_OR_RETURN(lower_bounds_, UploadLowerBounds(ck, config_, E, alloc));
    layers_.resize(L);
    for (int64_t l = 0; l < L; ++l) {
      Layer& w = layers_[l];
      const std::string m = names.MixerPrefix(l);
      HG_ASSIGN_OR_RETURN(HostTensor i, ck.ReadFloat(m + "i_proj.weight", {E, D}));
      HG_ASSIGN_OR_RETURN(HostTensor f, ck.ReadFloat(m + "f_proj.weight", {E, D}));
      HG_ASSIGN_OR_RETURN(HostTensor g, ck.ReadFloat(m + "g_proj.weight", {E, D}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&i, &f, &g}, &w.ifg_proj));
      HG_ASSIGN_OR_RETURN(HostTensor gn, ck.ReadFloat(m + "g_norm.weight", {E}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(gn, &w.g_norm));
      HG_ASSIGN_OR_RETURN(HostTensor o, ck.ReadFloat(m + "o_proj.weight", {D, E}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&o}, &w.o_proj));
    }
    return absl::OkStatus();
  }

  // h [E] per layer.
  int64_t StateFloatsPerLayer() const override { return width_; }

  absl::Status AllocateScratch(DeviceAllocator& alloc) override {
    return scratch_.Allocate(alloc, config_.hidden_size, 3 * width_, width_);
  }

  absl::Status Enqueue(const MixerPass& pass) override {
    const Layer& w = layers_[pass.layer];
    const int E = static_cast<int>(width_);
    float* proj = scratch_.proj.as<float>();
    float* o = scratch_.o.as<float>();
    HG_RETURN_IF_ERROR(scratch_.ProjectIn(pass, w.ifg_proj, act_));
    HG_CUDA_RETURN(
        HgrnGates(proj, pass.rows, E, lower_bounds_[pass.layer].as<float>(), pass.stream));
    HG_CUDA_RETURN(HgrnScan(proj, pass.in->seq_row0, pass.num_seqs, E, pass.in->state_ptrs,
                            pass.in->out_ptrs, pass.layer * StateFloatsPerLayer(), o, pass.stream));
    HG_CUDA_RETURN(RmsNormGated(o, E, proj + 2 * E, scratch_.proj_width, w.g_norm.as<float>(),
                                static_cast<float>(config_.norm_eps), pass.rows, E, E,
                                scratch_.onorm.get(), act_, E, pass.stream));
    return scratch_.ProjectOut(pass, w.o_proj, act_);
  }

 private:
  struct Layer {
    DeviceBuffer ifg_proj;  // act [3E, D]: i_proj | f_proj | g_proj
    DeviceBuffer g_norm;    // fp32 [E]
    DeviceBuffer o_proj;    // act [D, E]
  };

  ModelConfig config_;
  Act act_;
  int64_t width_;  // E = D * expand_ratio
  ProjectionScratch scratch_;
  std::vector<Layer> layers_;
  std::vector<DeviceBuffer> lower_bounds_;  // fp32 per layer (empty: none)
};

}  // namespace

MixerOrError MakeHgrnMixer(const ModelConfig& config, Act act) {
  if (config.use_short_conv) {
    return absl::UnimplementedError("use_short_conv is not supported on CUDA");
  }
  return std::make_unique<HgrnMixer>(config, act);
}

}  // namespace hgeval::cuda
