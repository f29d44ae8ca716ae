// Mamba-1 (Hugging Face MambaForCausalLM, `backbone.*` keys; specs/models.md §6) on the
// GPU: in_proj, the causal depthwise conv, x_proj and dt_proj, the selective scan and
// out_proj; a block is norm -> mixer only (no MLP). The conv output, x_proj, dt_proj and
// the scan stay fp32 in both modes. The CPU's forward pass: engine/cpu/mamba.cc.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/cuda_mixers.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

class MambaMixer final : public CudaTokenMixer {
 public:
  MambaMixer(const ModelConfig& c, Act act)
      : config_(c),
        act_(act),
        inner_(c.mamba_inner),
        dt_rank_(c.time_step_rank),
        xdbc_width_(c.time_step_rank + 2 * c.state_size) {}

  BlockLayout layout() const override {
    BlockLayout layout;
    layout.mlp = false;
    return layout;
  }

  absl::Status Load(const Checkpoint& ck, const BlockTensorNames& names,
                    DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size, e = inner_, n = config_.state_size, r = dt_rank_;
    const int64_t kc = config_.conv_kernel;
    layers_.resize(config_.num_layers);
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      Layer& w = layers_[l];
      const std::string m = names.MixerPrefix(l);
      HG_ASSIGN_OR_RETURN(HostTensor in, ck.ReadFloat(m + "in_proj.weight", {2 * e, D}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&in}, &w.in_proj));
      if (config_.use_bias) {
        HG_ASSIGN_OR_RETURN(HostTensor ib, ck.ReadFloat(m + "in_proj.bias", {2 * e}));
        HG_RETURN_IF_ERROR(alloc.UploadFloat(ib, &w.in_bias));
        HG_ASSIGN_OR_RETURN(HostTensor ob, ck.ReadFloat(m + "out_proj.bias", {D}));
        HG_RETURN_IF_ERROR(alloc.UploadFloat(ob, &w.out_bias));
      }
      HG_ASSIGN_OR_RETURN(HostTensor cw, ck.ReadFloat(m + "conv1d.weight", {e, 1, kc}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(cw, &w.conv_w));
      if (config_.use_conv_bias) {
        HG_ASSIGN_OR_RETURN(HostTensor cb, ck.ReadFloat(m + "conv1d.bias", {e}));
        HG_RETURN_IF_ERROR(alloc.UploadFloat(cb, &w.conv_b));
      }
      HG_ASSIGN_OR_RETURN(HostTensor xp, ck.ReadFloat(m + "x_proj.weight", {r + 2 * n, e}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(xp, &w.x_proj));  // fp32: small, feeds the scan
      HG_ASSIGN_OR_RETURN(HostTensor dtw, ck.ReadFloat(m + "dt_proj.weight", {e, r}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(dtw, &w.dt_w));  // fp32: its input (xdbc) is fp32
      HG_ASSIGN_OR_RETURN(HostTensor dtb, ck.ReadFloat(m + "dt_proj.bias", {e}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(dtb, &w.dt_b));
      HG_ASSIGN_OR_RETURN(HostTensor alog, ck.ReadFloat(m + "A_log", {e, n}));
      HostTensor aneg = alog;
      for (float& x : aneg.data) x = -std::exp(x);
      HG_RETURN_IF_ERROR(alloc.UploadFloat(aneg, &w.a_neg));
      HG_ASSIGN_OR_RETURN(HostTensor dsk, ck.ReadFloat(m + "D", {e}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(dsk, &w.d_skip));
      HG_ASSIGN_OR_RETURN(HostTensor o, ck.ReadFloat(m + "out_proj.weight", {D, e}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&o}, &w.out_proj));
    }
    return absl::OkStatus();
  }

  // Per layer: the conv window [E, Kc - 1], then the scan state [E, N].
  int64_t StateFloatsPerLayer() const override {
    return inner_ * (config_.conv_kernel - 1 + config_.state_size);
  }

  absl::Status AllocateScratch(DeviceAllocator& alloc) override {
    const size_t R = kPackRows;
    HG_RETURN_IF_ERROR(alloc.Floats(&xz_, R * 2 * inner_));
    HG_RETURN_IF_ERROR(alloc.Floats(&xc_, R * inner_));
    HG_RETURN_IF_ERROR(alloc.Floats(&xdbc_, R * xdbc_width_));
    HG_RETURN_IF_ERROR(alloc.Floats(&dt_, R * inner_));
    return alloc.Acts(&y_, R * inner_);
  }

  absl::Status Enqueue(const MixerPass& pass) override {
    const Layer& w = layers_[pass.layer];
    const int64_t D = config_.hidden_size;
    const int E = static_cast<int>(inner_);
    const int N = static_cast<int>(config_.state_size);
    const int kc = static_cast<int>(config_.conv_kernel);
    const int64_t state_offset = pass.layer * StateFloatsPerLayer();
    const RowInputs& in = *pass.in;
    cudaStream_t s = pass.stream;
    float* xz = xz_.as<float>();
    HG_RETURN_IF_ERROR(pass.Linear(pass.rows, 2 * E, D, MatRef{pass.x, act_, D},
                                   MatRef{w.in_proj.get(), act_, D}, xz, Act::kF32, 2 * E));
    if (w.in_bias.get()) {
      HG_CUDA_RETURN(AddBias(xz, 2 * E, w.in_bias.as<float>(), pass.rows, 2 * E, s));
    }
    HG_CUDA_RETURN(MambaConv(xz, in.seq_row0, pass.num_seqs, E, kc, w.conv_w.as<float>(),
                             w.conv_b.as<float>(), in.state_ptrs, in.out_ptrs, state_offset,
                             xc_.get(), Act::kF32, s));
    // The conv output, x_proj, dt_proj and the scan stay fp32 in both modes (small next to
    // in_proj/out_proj; the selective scan is sensitive to dt, B and C).
    HG_RETURN_IF_ERROR(pass.Linear(pass.rows, xdbc_width_, E, MatRef{xc_.get(), Act::kF32, E},
                                   MatRef{w.x_proj.get(), Act::kF32, E}, xdbc_.get(), Act::kF32,
                                   xdbc_width_));
    HG_RETURN_IF_ERROR(
        pass.Linear(pass.rows, E, dt_rank_, MatRef{xdbc_.get(), Act::kF32, xdbc_width_},
                    MatRef{w.dt_w.get(), Act::kF32, dt_rank_}, dt_.get(), Act::kF32, E));
    HG_CUDA_RETURN(MambaScan(xc_.as<float>(), dt_.as<float>(), w.dt_b.as<float>(),
                             xdbc_.as<float>(), xdbc_width_, static_cast<int>(dt_rank_), xz,
                             w.a_neg.as<float>(), w.d_skip.as<float>(), in.seq_row0, pass.num_seqs,
                             E, N, in.state_ptrs, in.out_ptrs,
                             state_offset + static_cast<int64_t>(E) * (kc - 1), y_.get(), act_, s));
    HG_RETURN_IF_ERROR(pass.Linear(pass.rows, D, E, MatRef{y_.get(), act_, E},
                                   MatRef{w.out_proj.get(), act_, E}, pass.delta, Act::kF32, D));
    if (w.out_bias.get()) {
      HG_CUDA_RETURN(
          AddBias(pass.delta, D, w.out_bias.as<float>(), pass.rows, static_cast<int>(D), s));
    }
    return absl::OkStatus();
  }

 private:
  struct Layer {
    DeviceBuffer in_proj, out_proj;   // act [2E, D], [D, E]
    DeviceBuffer in_bias, out_bias;   // fp32, when use_bias
    DeviceBuffer conv_w, conv_b;      // fp32 [E, 1, Kc], [E]
    DeviceBuffer x_proj, dt_w, dt_b;  // fp32 [R + 2N, E], [E, R], [E]
    DeviceBuffer a_neg, d_skip;       // fp32 -exp(A_log) [E, N], D [E]
  };

  ModelConfig config_;
  Act act_;
  int64_t inner_, dt_rank_, xdbc_width_;
  std::vector<Layer> layers_;
  DeviceBuffer xz_, xc_, xdbc_, dt_, y_;
};

}  // namespace

MixerOrError MakeMambaMixer(const ModelConfig& config, Act act) {
  if (config.state_size > 16) {
    return absl::UnimplementedError("Mamba state_size > 16 is not supported on CUDA");
  }
  if (config.conv_kernel > 8) {
    return absl::UnimplementedError("Mamba conv_kernel > 8 is not supported on CUDA");
  }
  return std::make_unique<MambaMixer>(config, act);
}

}  // namespace hgeval::cuda
