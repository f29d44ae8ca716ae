// TNL (TransNormerLLM, `modeling_transnormer.py`; specs/models.md §9) on the GPU: the fused
// q | k | v | u projection, silu on q and k with LRPE on the layers that have it, linear
// attention with a constant decay per head (the gated linear attention recurrence with g
// fixed to log(decay) and no scale: no new scan kernel), u * SimpleRMSNorm(o) (the gate
// without activation) and out_proj. Its block: SimpleRMSNorm without weights, a GLU
// without activation, the embedding scaled by sqrt(D). The CPU's forward pass:
// engine/cpu/tnl.cc.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/cuda_mixers.h"
#include "engine/cuda/kernels_fused_gates.h"
#include "engine/cuda/linear_attention.h"
#include "engine/model/tnl_decay.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

// SimpleRMSNorm's eps (TNL's config has no norm_eps).
constexpr double kSimpleRmsNormEps = 1e-6;

bool AnyLrpe(const ModelConfig& c) {
  for (bool b : c.tnl_lrpe) {
    if (b) return true;
  }
  return false;
}

class TnlMixer final : public LinearAttentionMixer {
 public:
  TnlMixer(const ModelConfig& c, Act act)
      : config_(c), act_(act), head_dim_(c.hidden_size / c.num_heads) {
    // With LRPE on any layer, q and k are [cos | sin] halves: dk = 2e everywhere.
    attention_ = CudaLinearAttention(c.num_heads, AnyLrpe(c) ? 2 * head_dim_ : head_dim_, head_dim_,
                                     /*scale=*/1.0f, act);
  }

  BlockLayout layout() const override {
    BlockLayout layout;
    layout.mlp_silu = false;
    layout.norm_weights = false;
    if (config_.tnl_scale_embedding) {
      layout.embedding_scale = std::sqrt(static_cast<float>(config_.hidden_size));
    }
    layout.norm_eps = kSimpleRmsNormEps;
    layout.o_proj_adds_to_residual = true;  // out_proj through ProjectOut
    return layout;
  }

  int64_t dk() const { return attention_.dk(); }

  absl::Status Load(const Checkpoint& ck, const BlockTensorNames& names,
                    DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size, L = config_.num_layers, H = config_.num_heads;
    layers_.resize(L);
    for (int64_t l = 0; l < L; ++l) {
      Layer& w = layers_[l];
      const std::string m = names.MixerPrefix(l);
      HG_RETURN_IF_ERROR(alloc.UploadDerived(std::vector<float>(D, 1.0f), &w.g_norm));
      HG_ASSIGN_OR_RETURN(HostTensor qkvu, ck.ReadFloat(m + "qkvu_proj.weight", {4 * D, D}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&qkvu}, &w.qkvu_proj));
      HG_ASSIGN_OR_RETURN(HostTensor o, ck.ReadFloat(m + "out_proj.weight", {D, D}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&o}, &w.out_proj));
      if (!config_.tnl_lrpe.empty() && config_.tnl_lrpe[l]) {
        HG_ASSIGN_OR_RETURN(HostTensor theta, ck.ReadFloat(m + "lrpe.theta", {H, 1, head_dim_}));
        HG_RETURN_IF_ERROR(alloc.UploadFloat(theta, &w.lrpe_theta));
      }
      // The decay is derived from the config (engine/model/tnl_decay.h), not a weight.
      std::vector<float> log_decay;
      for (double decay : TnlDecays(H, l, L)) {
        log_decay.push_back(static_cast<float>(std::log(decay)));
      }
      HG_RETURN_IF_ERROR(alloc.UploadDerived(log_decay, &w.log_decay));
    }
    return absl::OkStatus();
  }

  int64_t StateFloatsPerLayer() const override { return attention_.state_floats(); }

  absl::Status AllocateScratch(DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size;
    // proj as the packs hold it: bf16 where every layer's key dim runs the tensor cores.
    const Act proj_act = attention_.PackOperandsAct(attention_.dk()) == Act::kBF16 &&
                                 attention_.PackOperandsAct(head_dim_) == Act::kBF16
                             ? Act::kBF16
                             : Act::kF32;
    HG_RETURN_IF_ERROR(scratch_.Allocate(alloc, D, 4 * D, D, /*with_o=*/true, proj_act));
    // There the chunk kernels read a pack's v in place from proj, so the attention holds
    // none, and in layers without LRPE (which call the recurrence at key dim e) q and k
    // raw, taking their SiLU (LRPE layers' q and k stay packed by the gate kernel).
    const bool bf16_proj = proj_act == Act::kBF16;
    values_in_proj_ = bf16_proj && attention_.ReadsOperandInPlace(2 * D, 4 * D);
    raw_qk_in_proj_ = bf16_proj && attention_.ReadsOperandInPlace(0, 4 * D) &&
                      attention_.ReadsOperandInPlace(D, 4 * D);
    return attention_.Allocate(alloc, {head_dim_}, /*pack_values=*/!values_in_proj_);
  }
  absl::Status Enqueue(const MixerPass& pass) override {
    const Layer& w = layers_[pass.layer];
    const int D = static_cast<int>(config_.hidden_size);
    float* o = scratch_.o.as<float>();
    // A layer without LRPE runs at key dim e, not the model's 2e (its second key half would
    // be zeros: twice the recurrence's work and state traffic for nothing); its heads sit at
    // e · e floats each in the first part of the layer's state.
    const bool lrpe = w.lrpe_theta.get() != nullptr;
    const int64_t layer_dk = lrpe ? attention_.dk() : head_dim_;
    const int H = static_cast<int>(attention_.heads()), e = static_cast<int>(head_dim_);
    const float* theta = lrpe ? w.lrpe_theta.as<float>() : nullptr;
    // In bf16 mode the packs' q | k | v | u leave the GEMM as bf16 (as fla's projections
    // do): the gates and the output gate read half the bytes. Decode steps keep them fp32.
    const Act proj_act = pass.decode ? Act::kF32 : attention_.PackOperandsAct(layer_dk);
    HG_RETURN_IF_ERROR(scratch_.ProjectIn(pass, w.qkvu_proj, act_, proj_act));
    DecayLayout g_layout = DecayLayout::kPerKey;
    PackValues values;
    PackRawQk raw;
    if (pass.decode) {
      // Decode steps: fp32 proj.
      HG_CUDA_RETURN(TnlGates(scratch_.proj.as<float>(), pass.rows, H, e,
                              static_cast<int>(layer_dk), theta, pass.in->positions,
                              w.log_decay.as<float>(), attention_.q(), attention_.k(),
                              attention_.g(), attention_.v(), pass.stream));
    } else {
      // Packs: the gates and the chunk-local cumsum of the decay in one kernel. The decay is
      // one constant a head, so where the tensor-core kernels run g is held once per row
      // and head, not repeated over the keys. There v, and in layers without LRPE q and k,
      // are read in place from proj (the chunk kernels take q's and k's SiLU), so the gate
      // kernel writes only what is left.
      g_layout =
          attention_.PackTakesHeadDecay(layer_dk) ? DecayLayout::kPerHead : DecayLayout::kPerKey;
      const char* proj = static_cast<const char*>(scratch_.proj.get());
      const size_t size = ActSize(proj_act);
      if (values_in_proj_) values = PackValues{proj + 2 * D * size, scratch_.proj_width};
      if (!lrpe && raw_qk_in_proj_ && g_layout == DecayLayout::kPerHead) {
        raw = PackRawQk{proj, proj + D * size, scratch_.proj_width, /*silu=*/true};
      }
      const bool raw_qk = raw.q != nullptr;
      HG_CUDA_RETURN(TnlGatesChunkCumsum(
          proj, *pass.pack, H, e, static_cast<int>(layer_dk), theta, pass.in->positions,
          w.log_decay.as<float>(), g_layout, raw_qk ? nullptr : attention_.q(),
          raw_qk ? nullptr : attention_.k(), attention_.g(),
          values.v != nullptr ? nullptr : attention_.v(), proj_act, pass.stream));
    }
    HG_RETURN_IF_ERROR(attention_.Enqueue(
        pass, pass.layer * StateFloatsPerLayer(), pass.ReportsOutput() ? o : nullptr, layer_dk,
        /*g_chunk_cumulative=*/!pass.decode, g_layout, values, raw));
    const void* u = static_cast<const char*>(scratch_.proj.get()) + 3 * D * ActSize(proj_act);
    const Act o_act = attention_.OutputAct(pass, layer_dk);
    auto g_norm = [&](int rows, const int32_t* o_rows) {
      return RmsNormGated(o, D, u, scratch_.proj_width, w.g_norm.as<float>(),
                          static_cast<float>(kSimpleRmsNormEps), rows, D, D, scratch_.onorm.get(),
                          act_, D, pass.stream, /*gate_silu=*/false, proj_act, o_act, o_rows);
    };
    return scratch_.NormAndProjectOut(pass, g_norm, w.out_proj, act_);
  }

  bool ProjectsOutputRows() const override { return true; }

 private:
  struct Layer {
    DeviceBuffer qkvu_proj;   // act [4D, D]
    DeviceBuffer out_proj;    // act [D, D]
    DeviceBuffer g_norm;      // fp32 ones [D] (SimpleRMSNorm)
    DeviceBuffer lrpe_theta;  // fp32 [H * e] (LRPE layers only)
    DeviceBuffer log_decay;   // fp32 [H]
  };

  ModelConfig config_;
  Act act_;
  int64_t head_dim_;             // e = D / H
  bool values_in_proj_ = false;  // packs' v read in place from proj (bf16 packs)
  bool raw_qk_in_proj_ = false;  // packs without LRPE read q, k raw from proj (bf16 packs)
  ProjectionScratch scratch_;
  std::vector<Layer> layers_;
};

}  // namespace

MixerOrError MakeTnlMixer(const ModelConfig& config, Act act) {
  if (config.use_bias) {
    return absl::UnimplementedError(
        "TNL with bias: true is not supported on CUDA (no released TNL has it); use --device cpu");
  }
  if (config.use_short_conv) {
    return absl::UnimplementedError("use_short_conv is not supported on CUDA");
  }
  auto mixer = std::make_unique<TnlMixer>(config, act);
  if (mixer->dk() > 256) {
    return absl::UnimplementedError("head key dim > 256 is not supported on CUDA");
  }
  return mixer;
}

}  // namespace hgeval::cuda
