// HGRN2 (fla models/hgrn2, layers/hgrn2.py; specs/models.md §2) on the GPU: the fused
// q | f | i projection, the lower-bounded forget gate, the gated linear attention
// recurrence (chunkwise for packs, one fused step for decode), g_norm and o_proj.
// The CPU's forward pass: engine/cpu/hgrn2.cc.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/cuda_mixers.h"
#include "engine/cuda/env_switch.h"
#include "engine/cuda/kernels_fused_gates.h"
#include "engine/cuda/linear_attention.h"
#include "engine/cuda/lower_bounds.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

// fla runs g_norm through rms_norm_linear with its default eps 1e-5, whatever
// config.norm_eps says (specs/models.md §2.4 step 6).
constexpr float kGNormEps = 1e-5f;

class Hgrn2Mixer final : public LinearAttentionMixer {
 public:
  Hgrn2Mixer(const ModelConfig& c, Act act) : config_(c), act_(act) {
    attention_ = CudaLinearAttention(c.num_heads, c.expand_ratio, c.expand_ratio,
                                     1.0f / std::sqrt(static_cast<float>(c.expand_ratio)), act);
    // HGEVAL_CUDA_FUSED_STEP=1: the decode step and g_norm as one cluster kernel. Off by
    // default: on the H100 it gained 4% at one live row and lost 8% at 32 (docs/cuda.md,
    // performance log entry 7).
    fuse_step_norm_ = EnvIs("HGEVAL_CUDA_FUSED_STEP", "1");
  }

  absl::Status Load(const Checkpoint& ck, const BlockTensorNames& names,
                    DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size, L = config_.num_layers;
    // Lower bounds (engine/model/lower_bounds.h): layer 0 has none.
    HG_ASSIGN_OR_RETURN(lower_bounds_, UploadLowerBounds(ck, config_, D, alloc));
    layers_.resize(L);
    for (int64_t l = 0; l < L; ++l) {
      Layer& w = layers_[l];
      const std::string m = names.MixerPrefix(l);
      HG_ASSIGN_OR_RETURN(HostTensor q, ck.ReadFloat(m + "q_proj.weight", {D, D}));
      HG_ASSIGN_OR_RETURN(HostTensor f, ck.ReadFloat(m + "f_proj.weight", {D, D}));
      HG_ASSIGN_OR_RETURN(HostTensor i, ck.ReadFloat(m + "i_proj.weight", {D, D}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&q, &f, &i}, &w.qfi_proj));
      HG_ASSIGN_OR_RETURN(HostTensor gn, ck.ReadFloat(m + "g_norm.weight", {D}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(gn, &w.g_norm));
      HG_ASSIGN_OR_RETURN(HostTensor o, ck.ReadFloat(m + "o_proj.weight", {D, D}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&o}, &w.o_proj));
    }
    return absl::OkStatus();
  }

  int64_t StateFloatsPerLayer() const override { return attention_.state_floats(); }

  absl::Status AllocateScratch(DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size;
    // proj and onorm hold a pack's rows, proj as the packs hold it (bf16 in bf16 mode); o
    // lives in pass.delta. Where the tensor-core kernels run, q and v are read in place from
    // proj's q and i columns, so the attention holds no pack of either.
    HG_RETURN_IF_ERROR(
        scratch_.Allocate(alloc, D, 3 * D, D, /*with_o=*/false, attention_.PackOperandsAct()));
    const bool own = !OperandsInProjection();
    return attention_.Allocate(alloc, {}, /*pack_values=*/own, /*pack_queries=*/own);
  }
  BlockLayout layout() const override {
    BlockLayout layout;
    layout.o_proj_adds_to_residual = true;  // o_proj through ProjectOut
    return layout;
  }

  absl::Status Enqueue(const MixerPass& pass) override {
    const Layer& w = layers_[pass.layer];
    const int D = static_cast<int>(config_.hidden_size);
    const int64_t state_offset = pass.layer * StateFloatsPerLayer();
    const float* lower_bound = lower_bounds_[pass.layer].as<float>();
    void* onorm = scratch_.onorm.get();
    // o is written into pass.delta (as attention_.OutputAct: bf16 for bf16 packs), which
    // o_proj's residual add leaves alone.
    float* o = pass.delta;
    if (pass.decode) {
      HG_RETURN_IF_ERROR(scratch_.ProjectIn(pass, w.qfi_proj, act_));
      // Gates, state update and output in one kernel, then g_norm (or both in one:
      // kernels_recurrent_step.cu).
      HG_CUDA_RETURN(Hgrn2DecodeStepNorm(
          scratch_.proj.as<float>(), lower_bound, pass.rows, static_cast<int>(attention_.heads()),
          static_cast<int>(attention_.dk()), attention_.scale(), pass.in->state_ptrs, state_offset,
          w.g_norm.as<float>(), kGNormEps, fuse_step_norm_, o, onorm, act_, pass.stream));
      return scratch_.ProjectOut(pass, w.o_proj, act_);
    }
    // In bf16 mode the packs' q | f | i leave the GEMM as bf16 (as fla's projections do):
    // the gates read half the bytes. Decode steps keep them fp32.
    const Act qkv_act = attention_.PackOperandsAct();
    HG_RETURN_IF_ERROR(scratch_.ProjectIn(pass, w.qfi_proj, act_, qkv_act));
    // The gates and the chunk-local cumsum of g in one kernel (kernels_fused_gates.h).
    // Where the tensor-core kernels run, q and v are read in place from proj: v is i as it
    // is, and the output kernel takes q's SiLU as it loads it.
    const bool in_proj = OperandsInProjection();
    HG_CUDA_RETURN(Hgrn2GatesChunkCumsum(
        scratch_.proj.get(), *pass.pack, D, lower_bound, in_proj ? nullptr : attention_.q(),
        attention_.k(), attention_.g(), in_proj ? nullptr : attention_.v(), qkv_act, pass.stream));
    PackValues values;
    PackRawQk queries;
    if (in_proj) {
      const char* proj = static_cast<const char*>(scratch_.proj.get());
      values = PackValues{proj + 2 * D * ActSize(qkv_act), 3 * D};
      queries = PackRawQk{.q = proj, .ld = 3 * D, .silu = true};
    }
    HG_RETURN_IF_ERROR(attention_.Enqueue(pass, state_offset, pass.ReportsOutput() ? o : nullptr,
                                          /*call_dk=*/0, /*g_chunk_cumulative=*/true,
                                          DecayLayout::kPerKey, values, queries));
    // g_norm: one RMSNorm over all D channels (not per head).
    const Act o_act = attention_.OutputAct(pass);
    auto g_norm = [&](int rows, const int32_t* o_rows) {
      return RmsNormGated(o, D, nullptr, 0, w.g_norm.as<float>(), kGNormEps, rows, D, D, onorm,
                          act_, D, pass.stream, /*gate_silu=*/true, Act::kF32, o_act, o_rows);
    };
    return scratch_.NormAndProjectOut(pass, g_norm, w.o_proj, act_);
  }

  bool ProjectsOutputRows() const override { return true; }

 private:
  // Whether packs read q and v in place from proj (bf16 packs on the tensor-core kernels,
  // proj's rows 16-byte aligned).
  bool OperandsInProjection() const {
    const int64_t D = config_.hidden_size;
    return attention_.ReadsOperandInPlace(2 * D, 3 * D);
  }

  struct Layer {
    DeviceBuffer qfi_proj;  // act [3D, D]: q_proj | f_proj | i_proj
    DeviceBuffer g_norm;    // fp32 [D]
    DeviceBuffer o_proj;    // act [D, D]
  };

  ModelConfig config_;
  Act act_;
  bool fuse_step_norm_ = false;
  ProjectionScratch scratch_;
  std::vector<Layer> layers_;
  std::vector<DeviceBuffer> lower_bounds_;  // fp32 per layer (empty: none)
};

}  // namespace

MixerOrError MakeHgrn2Mixer(const ModelConfig& config, Act act) {
  if (config.expand_ratio > 256) {
    return absl::UnimplementedError("head key dim > 256 is not supported on CUDA");
  }
  if (config.use_short_conv) {
    return absl::UnimplementedError("use_short_conv is not supported on CUDA");
  }
  return std::make_unique<Hgrn2Mixer>(config, act);
}

}  // namespace hgeval::cuda
