// GLA (fla models/gla, layers/gla.py; specs/models.md §4) on the GPU: the fused
// q | k | v | g | gk_proj.0 projection, the low-rank gk_proj.1 with bias, the gates
// (logsigmoid / 16, GQA heads repeated), the gated linear attention recurrence, the
// swish-gated g_norm and o_proj. The CPU's forward pass: engine/cpu/gla.cc.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_mixers.h"
#include "engine/cuda/kernels_fused_gates.h"
#include "engine/cuda/linear_attention.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

// gk_proj's low rank and fla's gate normaliser.
constexpr int64_t kGateRank = 16;
constexpr float kGateNormalizer = 16.0f;

class GlaMixer final : public LinearAttentionMixer {
 public:
  GlaMixer(const ModelConfig& c, Act act) : config_(c), act_(act) {
    const int64_t D = c.hidden_size;
    heads_ = c.num_heads;
    kv_heads_ = c.num_kv_heads;
    const int64_t key_dim = static_cast<int64_t>(D * c.expand_k);
    const int64_t value_dim = static_cast<int64_t>(D * c.expand_v);
    dk_ = key_dim / heads_;
    dv_ = value_dim / heads_;
    const int64_t group = heads_ / kv_heads_;
    // Columns of the fused projection: q | k | v | g (output gate) | gk_proj.0.
    k_off_ = key_dim;
    v_off_ = k_off_ + key_dim / group;
    g_off_ = v_off_ + value_dim / group;
    gk_off_ = g_off_ + (c.use_output_gate ? value_dim : 0);
    proj_width_ = gk_off_ + kGateRank;
    value_dim_ = value_dim;
    attention_ =
        CudaLinearAttention(heads_, dk_, dv_, 1.0f / std::sqrt(static_cast<float>(dk_)), act);
  }

  absl::Status Load(const Checkpoint& ck, const BlockTensorNames& names,
                    DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size;
    const int64_t group = heads_ / kv_heads_;
    const int64_t key_dim = heads_ * dk_, value_dim = heads_ * dv_;
    layers_.resize(config_.num_layers);
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      Layer& w = layers_[l];
      const std::string m = names.MixerPrefix(l);
      HG_ASSIGN_OR_RETURN(HostTensor q, ck.ReadFloat(m + "q_proj.weight", {key_dim, D}));
      HG_ASSIGN_OR_RETURN(HostTensor k, ck.ReadFloat(m + "k_proj.weight", {key_dim / group, D}));
      HG_ASSIGN_OR_RETURN(HostTensor v, ck.ReadFloat(m + "v_proj.weight", {value_dim / group, D}));
      HG_ASSIGN_OR_RETURN(HostTensor gk0, ck.ReadFloat(m + "gk_proj.0.weight", {kGateRank, D}));
      if (config_.use_output_gate) {
        HG_ASSIGN_OR_RETURN(HostTensor g, ck.ReadFloat(m + "g_proj.weight", {value_dim, D}));
        HG_RETURN_IF_ERROR(alloc.UploadAct({&q, &k, &v, &g, &gk0}, &w.in_proj));
      } else {
        HG_RETURN_IF_ERROR(alloc.UploadAct({&q, &k, &v, &gk0}, &w.in_proj));
      }
      HG_ASSIGN_OR_RETURN(HostTensor gk1,
                          ck.ReadFloat(m + "gk_proj.1.weight", {key_dim / group, kGateRank}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(gk1, &w.gk_w));
      HG_ASSIGN_OR_RETURN(HostTensor gk1b, ck.ReadFloat(m + "gk_proj.1.bias", {key_dim / group}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(gk1b, &w.gk_b));
      const std::string g_norm =
          ck.Has(m + "g_norm_swish_gate.weight") ? "g_norm_swish_gate.weight" : "g_norm.weight";
      HG_ASSIGN_OR_RETURN(HostTensor gn, ck.ReadFloat(m + g_norm, {dv_}));
      HG_RETURN_IF_ERROR(alloc.UploadFloat(gn, &w.g_norm));
      HG_ASSIGN_OR_RETURN(HostTensor o, ck.ReadFloat(m + "o_proj.weight", {D, value_dim}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&o}, &w.o_proj));
    }
    return absl::OkStatus();
  }

  int64_t dk() const { return dk_; }
  int64_t StateFloatsPerLayer() const override { return attention_.state_floats(); }

  absl::Status AllocateScratch(DeviceAllocator& alloc) override {
    // proj as the packs hold it: bf16 where the tensor-core kernels run. There the chunk
    // kernels read a pack's v in place from proj (where its heads are q's, unshared, and
    // its rows 16-byte aligned), so the attention holds none.
    const Act proj_act = attention_.PackOperandsAct();
    HG_RETURN_IF_ERROR(scratch_.Allocate(alloc, config_.hidden_size, proj_width_, value_dim_,
                                         /*with_o=*/true, proj_act));
    values_in_proj_ = kv_heads_ == heads_ && attention_.ReadsOperandInPlace(v_off_, proj_width_);
    // Likewise q and k, which the chunk kernels take as they are (no gate kernel copy).
    qk_in_proj_ = kv_heads_ == heads_ && attention_.ReadsOperandInPlace(0, proj_width_) &&
                  attention_.ReadsOperandInPlace(k_off_, proj_width_);
    HG_RETURN_IF_ERROR(attention_.Allocate(alloc, {}, /*pack_values=*/!values_in_proj_));
    if (proj_act != Act::kF32) {
      HG_RETURN_IF_ERROR(alloc.Floats(&gk_low_, static_cast<size_t>(kPackRows) * kGateRank));
    }
    return alloc.Floats(&gk_, static_cast<size_t>(kPackRows) * kv_heads_ * dk_);
  }
  BlockLayout layout() const override {
    BlockLayout layout;
    layout.o_proj_adds_to_residual = true;  // o_proj through ProjectOut
    return layout;
  }

  absl::Status Enqueue(const MixerPass& pass) override {
    const Layer& w = layers_[pass.layer];
    float* o = scratch_.o.as<float>();
    const int64_t kvk = kv_heads_ * dk_;
    // In bf16 mode the packs' q | k | v | g leave the GEMM as bf16 (as fla's projections
    // do): the gates and the output gate read half the bytes. gk_proj.0 stays fp32 (its own
    // GEMM of kGateRank columns), so the decays keep their fp32 low rank. Decode steps keep
    // the whole projection fp32.
    const Act proj_act = pass.decode ? Act::kF32 : attention_.PackOperandsAct();
    const auto proj_at = [&](int64_t column) {
      return static_cast<const char*>(scratch_.proj.get()) + column * ActSize(proj_act);
    };
    MatRef gk_low{proj_at(gk_off_), Act::kF32, proj_width_};  // gk_proj.0's output
    if (proj_act == Act::kF32) {
      HG_RETURN_IF_ERROR(scratch_.ProjectIn(pass, w.in_proj, act_));
    } else {
      const int64_t D = config_.hidden_size;
      const MatRef x{pass.x, act_, D};
      HG_RETURN_IF_ERROR(pass.Linear(pass.rows, gk_off_, D, x, MatRef{w.in_proj.get(), act_, D},
                                     scratch_.proj.get(), proj_act, proj_width_));
      const void* gk0_w = static_cast<const char*>(w.in_proj.get()) + gk_off_ * D * ActSize(act_);
      HG_RETURN_IF_ERROR(pass.Linear(pass.rows, kGateRank, D, x, MatRef{gk0_w, act_, D},
                                     gk_low_.get(), Act::kF32, kGateRank));
      gk_low = MatRef{gk_low_.get(), Act::kF32, kGateRank};
    }
    HG_RETURN_IF_ERROR(pass.Linear(pass.rows, kvk, kGateRank, gk_low,
                                   MatRef{w.gk_w.get(), Act::kF32, kGateRank}, gk_.get(), Act::kF32,
                                   kvk));
    const int H = static_cast<int>(heads_), Hkv = static_cast<int>(kv_heads_);
    const int dk = static_cast<int>(dk_), dv = static_cast<int>(dv_);
    const bool clamp = config_.clamp_min.has_value();
    const float clamp_min = static_cast<float>(config_.clamp_min.value_or(0.0));
    PackValues values;
    PackRawQk raw;
    if (pass.decode) {
      HG_CUDA_RETURN(AddBias(gk_.as<float>(), kvk, w.gk_b.as<float>(), pass.rows,
                             static_cast<int>(kvk), pass.stream));
      HG_CUDA_RETURN(GlaGates(scratch_.proj.as<float>(), proj_width_, k_off_, v_off_,
                              gk_.as<float>(), pass.rows, H, Hkv, dk, dv, kGateNormalizer, clamp,
                              clamp_min, attention_.q(), attention_.k(), attention_.g(),
                              attention_.v(), pass.stream));
    } else {
      // Packs: gk_proj.1's bias, the gates and the chunk-local cumsum of g in one kernel,
      // which writes q, k and v only where the chunk kernels do not read them in place.
      if (values_in_proj_) values = PackValues{proj_at(v_off_), proj_width_};
      if (qk_in_proj_) raw = PackRawQk{proj_at(0), proj_at(k_off_), proj_width_, /*silu=*/false};
      HG_CUDA_RETURN(GlaGatesChunkCumsum(
          scratch_.proj.get(), proj_act, proj_width_, k_off_, v_off_, gk_.as<float>(),
          w.gk_b.as<float>(), *pass.pack, H, Hkv, dk, dv, kGateNormalizer, clamp, clamp_min,
          qk_in_proj_ ? nullptr : attention_.q(), qk_in_proj_ ? nullptr : attention_.k(),
          attention_.g(), values_in_proj_ ? nullptr : attention_.v(), attention_.PackOperandsAct(),
          pass.stream));
    }
    HG_RETURN_IF_ERROR(attention_.Enqueue(
        pass, pass.layer * StateFloatsPerLayer(), pass.ReportsOutput() ? o : nullptr,
        /*call_dk=*/0, /*g_chunk_cumulative=*/!pass.decode, DecayLayout::kPerKey, values, raw));
    const void* gate = config_.use_output_gate ? proj_at(g_off_) : nullptr;
    const int width = static_cast<int>(value_dim_);
    const Act o_act = attention_.OutputAct(pass);
    auto g_norm = [&](int rows, const int32_t* o_rows) {
      return RmsNormGated(o, value_dim_, gate, proj_width_, w.g_norm.as<float>(),
                          static_cast<float>(config_.norm_eps), rows, width, static_cast<int>(dv_),
                          scratch_.onorm.get(), act_, value_dim_, pass.stream, /*gate_silu=*/true,
                          proj_act, o_act, o_rows);
    };
    return scratch_.NormAndProjectOut(pass, g_norm, w.o_proj, act_);
  }

  bool ProjectsOutputRows() const override { return true; }

 private:
  struct Layer {
    DeviceBuffer in_proj;     // act: q | k | v | g | gk_proj.0
    DeviceBuffer gk_w, gk_b;  // fp32 gk_proj.1 [Dk/G, 16], [Dk/G]
    DeviceBuffer g_norm;      // fp32 [dv]
    DeviceBuffer o_proj;      // act [D, Dv]
  };

  ModelConfig config_;
  Act act_;
  int64_t heads_ = 0, kv_heads_ = 0, dk_ = 0, dv_ = 0, value_dim_ = 0;
  int64_t k_off_ = 0, v_off_ = 0, g_off_ = 0, gk_off_ = 0, proj_width_ = 0;
  bool values_in_proj_ = false;  // packs read v in place from proj (AllocateScratch)
  bool qk_in_proj_ = false;      // packs read q and k in place from proj (AllocateScratch)
  ProjectionScratch scratch_;
  DeviceBuffer gk_;      // fp32 [rows, Dk/G]: gk_proj's output
  DeviceBuffer gk_low_;  // fp32 [rows, kGateRank]: gk_proj.0's output for bf16 packs
  std::vector<Layer> layers_;
};

}  // namespace

MixerOrError MakeGlaMixer(const ModelConfig& config, Act act) {
  if (!config.feature_map.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("GLA feature_map '", config.feature_map, "' is not supported on CUDA"));
  }
  if (config.use_short_conv) {
    return absl::UnimplementedError("use_short_conv is not supported on CUDA");
  }
  auto mixer = std::make_unique<GlaMixer>(config, act);
  if (mixer->dk() > 256) {
    return absl::UnimplementedError("head key dim > 256 is not supported on CUDA");
  }
  return mixer;
}

}  // namespace hgeval::cuda
