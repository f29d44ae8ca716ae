// CudaModel construction: reads weights through the Checkpoint interface, fuses the
// projections that share an input, converts to the activation dtype and uploads.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_model.h"
#include "engine/loader/float_convert.h"
#include "engine/loader/weight_reader.h"
#include "engine/model/lower_bounds.h"
#include "engine/model/tnl_decay.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

struct Names {
  std::string embed, final_norm, head, layer_prefix, norm1, norm2, mixer;
};

Names NamesFor(const ModelConfig& c) {
  Names n;
  switch (c.family) {
    case ModelFamily::kMamba:
      n = {"backbone.embeddings.weight",
           "backbone.norm_f.weight",
           "lm_head.weight",
           "backbone.layers.",
           "norm",
           "",
           "mixer"};
      break;
    case ModelFamily::kTnl:  // TransNormerLLM's names; its norms have no weights
      n = {"model.embed_tokens.weight",
           "",
           "lm_head.weight",
           "model.layers.",
           "",
           "",
           "token_mixer"};
      break;
    case ModelFamily::kLlama:
      if (!c.fla_key_names) {
        n = {"model.embed_tokens.weight",
             "model.norm.weight",
             "lm_head.weight",
             "model.layers.",
             "input_layernorm",
             "post_attention_layernorm",
             "self_attn"};
        break;
      }
      [[fallthrough]];  // fla's LLaMA layout uses the fla names below
    default:
      n = {"model.embeddings.weight",
           "model.norm.weight",
           "lm_head.weight",
           "model.layers.",
           "attn_norm",
           "mlp_norm",
           "attn"};
  }
  return n;
}

}  // namespace

absl::StatusOr<DeviceBuffer> CudaModel::Alloc(size_t bytes) {
  return DeviceBuffer::Make(ctx_->pool(), bytes == 0 ? 1 : bytes);
}

absl::Status CudaModel::Grow(DeviceBuffer* buf, size_t bytes) {
  if (buf->size() >= bytes) return absl::OkStatus();
  buf->Reset();
  HG_ASSIGN_OR_RETURN(*buf, Alloc(bytes));
  return absl::OkStatus();
}

absl::Status CudaModel::UploadFloat(const HostTensor& t, DeviceBuffer* out) {
  HG_ASSIGN_OR_RETURN(*out, Alloc(t.data.size() * sizeof(float)));
  HG_CUDA_RETURN(
      cudaMemcpy(out->get(), t.data.data(), t.data.size() * sizeof(float), cudaMemcpyHostToDevice));
  info_.num_parameters += t.numel();
  return absl::OkStatus();
}

absl::Status CudaModel::UploadAct(const std::vector<const HostTensor*>& parts, DeviceBuffer* out) {
  size_t total = 0;
  for (const HostTensor* p : parts) total += p->data.size();
  HG_ASSIGN_OR_RETURN(*out, Alloc(total * ActSize(act_)));
  size_t offset = 0;
  for (const HostTensor* p : parts) {
    info_.num_parameters += p->numel();
    const size_t n = p->data.size();
    if (act_ == Act::kF32) {
      HG_CUDA_RETURN(cudaMemcpy(out->as<float>() + offset, p->data.data(), n * sizeof(float),
                                cudaMemcpyHostToDevice));
    } else {
      std::vector<uint16_t> tmp(n);
      for (size_t i = 0; i < n; ++i) tmp[i] = FloatToBf16(p->data[i]);
      HG_CUDA_RETURN(cudaMemcpy(out->as<uint16_t>() + offset, tmp.data(), n * sizeof(uint16_t),
                                cudaMemcpyHostToDevice));
    }
    offset += n;
  }
  return absl::OkStatus();
}

int64_t CudaModel::RecurrentFloatsPerLayer() const {
  switch (config_.family) {
    case ModelFamily::kHgrn2:
    case ModelFamily::kGla:
    case ModelFamily::kTnl:
      return heads_ * dk_ * dv_;
    case ModelFamily::kHgrn:
      return mix_width_;
    case ModelFamily::kMamba:
      return config_.mamba_inner * (config_.conv_kernel - 1 + config_.state_size);
    case ModelFamily::kLlama:
      return 0;
  }
  return 0;
}

absl::Status CudaModel::LoadWeights(const Checkpoint& ck) {
  const ModelConfig& c = config_;
  const Names names = NamesFor(c);
  D_ = c.hidden_size;
  V_ = c.vocab_size;
  L_ = c.num_layers;
  I_ = c.intermediate_size;
  const std::vector<int64_t> vec_d = {D_};

  std::string embed_name = names.embed;
  if (c.family == ModelFamily::kMamba && !ck.Has(embed_name) &&
      ck.Has("backbone.embedding.weight")) {
    embed_name = "backbone.embedding.weight";
  }
  // TNL's SimpleRMSNorm has no weight: its norms run with a weight of ones (not counted).
  HostTensor ones;
  ones.shape = {D_};
  ones.data.assign(D_, 1.0f);
  auto upload_ones = [&](DeviceBuffer* out) -> absl::Status {
    HG_RETURN_IF_ERROR(UploadFloat(ones, out));
    info_.num_parameters -= D_;
    return absl::OkStatus();
  };
  {
    HG_ASSIGN_OR_RETURN(HostTensor e, ck.ReadFloat(embed_name, std::vector<int64_t>{V_, D_}));
    const int64_t before = info_.num_parameters;
    HG_ASSIGN_OR_RETURN(HostTensor head,
                        ReadLmHead(ck, names.head, embed_name, c.tie_word_embeddings, V_, D_));
    if (c.family == ModelFamily::kTnl && c.tnl_scale_embedding) {
      // The input embedding is scaled by sqrt(D) (the tied head is not): the CPU's
      // row * scale, done once here.
      const float scale = std::sqrt(static_cast<float>(D_));
      for (float& x : e.data) x *= scale;
    }
    HG_RETURN_IF_ERROR(UploadAct({&e}, &embed_));
    HG_RETURN_IF_ERROR(UploadAct({&head}, &lm_head_));
    if (!ck.Has(names.head)) info_.num_parameters = before + V_ * D_;  // tied: counted once
    if (c.family == ModelFamily::kTnl) {
      HG_RETURN_IF_ERROR(upload_ones(&final_norm_));
    } else {
      HG_ASSIGN_OR_RETURN(HostTensor fn, ck.ReadFloat(names.final_norm, vec_d));
      HG_RETURN_IF_ERROR(UploadFloat(fn, &final_norm_));
    }
  }

  // HGRN2 / HGRN lower bounds (engine/model/lower_bounds.h).
  std::vector<std::vector<float>> lower_bounds;
  if ((c.family == ModelFamily::kHgrn2 || c.family == ModelFamily::kHgrn) && c.use_lower_bound) {
    const int64_t width = c.family == ModelFamily::kHgrn ? D_ * c.expand_ratio : D_;
    HG_ASSIGN_OR_RETURN(lower_bounds, ReadLowerBounds(ck, "model.lower_bounds", L_, width));
    info_.num_parameters += L_ * width;
  }

  switch (c.family) {
    case ModelFamily::kHgrn2:
      heads_ = c.num_heads;
      dk_ = dv_ = c.expand_ratio;
      proj_width_ = 3 * D_;
      mix_width_ = D_;
      mixer_scale_ = 1.0f / std::sqrt(static_cast<float>(dk_));
      break;
    case ModelFamily::kHgrn:
      mix_width_ = D_ * c.expand_ratio;
      proj_width_ = 3 * mix_width_;
      break;
    case ModelFamily::kGla: {
      if (!c.feature_map.empty()) {
        return absl::UnimplementedError(
            absl::StrCat("GLA feature_map '", c.feature_map, "' is not supported on CUDA"));
      }
      heads_ = c.num_heads;
      kv_heads_ = c.num_kv_heads;
      const int64_t key_dim = static_cast<int64_t>(D_ * c.expand_k);
      const int64_t value_dim = static_cast<int64_t>(D_ * c.expand_v);
      dk_ = key_dim / heads_;
      dv_ = value_dim / heads_;
      const int64_t group = heads_ / kv_heads_;
      gla_k_off_ = key_dim;
      gla_v_off_ = gla_k_off_ + key_dim / group;
      gla_g_off_ = gla_v_off_ + value_dim / group;
      gla_gk_off_ = gla_g_off_ + (c.use_output_gate ? value_dim : 0);
      proj_width_ = gla_gk_off_ + 16;
      mix_width_ = value_dim;
      mixer_scale_ = 1.0f / std::sqrt(static_cast<float>(dk_));
      break;
    }
    case ModelFamily::kLlama:
      heads_ = c.num_heads;
      kv_heads_ = c.num_kv_heads;
      dk_ = dv_ = c.head_dim;
      mix_width_ = heads_ * dk_;
      proj_width_ = 0;
      mixer_scale_ = 1.0f / std::sqrt(static_cast<float>(dk_));
      break;
    case ModelFamily::kTnl: {
      heads_ = c.num_heads;
      tnl_head_dim_ = D_ / heads_;
      bool any_lrpe = false;
      for (bool b : c.tnl_lrpe) any_lrpe = any_lrpe || b;
      dk_ = any_lrpe ? 2 * tnl_head_dim_ : tnl_head_dim_;
      dv_ = tnl_head_dim_;
      proj_width_ = 4 * D_;  // q | k | v | u
      mix_width_ = D_;
      mixer_scale_ = 1.0f;  // TNL's linear attention is unscaled
      // SimpleRMSNorm's eps (the checkpoint's config has no norm_eps).
      config_.norm_eps = 1e-6;
      break;
    }
    case ModelFamily::kMamba:
      if (c.state_size > 16) {
        return absl::UnimplementedError("Mamba state_size > 16 is not supported on CUDA");
      }
      if (c.conv_kernel > 8) {
        return absl::UnimplementedError("Mamba conv_kernel > 8 is not supported on CUDA");
      }
      mix_width_ = c.mamba_inner;
      proj_width_ = 2 * mix_width_;
      mamba_dt_rank_ = c.time_step_rank;
      mamba_xdbc_ = mamba_dt_rank_ + 2 * c.state_size;
      break;
  }
  if ((c.family == ModelFamily::kHgrn2 || c.family == ModelFamily::kGla ||
       c.family == ModelFamily::kTnl) &&
      dk_ > 256) {
    return absl::UnimplementedError("head key dim > 256 is not supported on CUDA");
  }
  if (c.use_short_conv && c.family != ModelFamily::kMamba && c.family != ModelFamily::kLlama) {
    return absl::UnimplementedError("use_short_conv is not supported on CUDA");
  }

  layers_.resize(L_);
  for (int64_t l = 0; l < L_; ++l) {
    LayerWeights& w = layers_[l];
    const std::string p = absl::StrCat(names.layer_prefix, l, ".");
    const std::string m = p + names.mixer + ".";
    if (c.family == ModelFamily::kTnl) {
      HG_RETURN_IF_ERROR(upload_ones(&w.norm1));
      HG_RETURN_IF_ERROR(upload_ones(&w.norm2));
      HG_RETURN_IF_ERROR(upload_ones(&w.g_norm));
      HG_ASSIGN_OR_RETURN(HostTensor l1, ck.ReadFloat(p + "channel_mixer.l1.weight", {I_, D_}));
      HG_ASSIGN_OR_RETURN(HostTensor l2, ck.ReadFloat(p + "channel_mixer.l2.weight", {I_, D_}));
      HG_ASSIGN_OR_RETURN(HostTensor l3, ck.ReadFloat(p + "channel_mixer.l3.weight", {D_, I_}));
      HG_RETURN_IF_ERROR(UploadAct({&l1, &l2}, &w.mlp_gate_up));
      HG_RETURN_IF_ERROR(UploadAct({&l3}, &w.mlp_down));
    } else {
      HG_ASSIGN_OR_RETURN(HostTensor n1, ck.ReadFloat(p + names.norm1 + ".weight", vec_d));
      HG_RETURN_IF_ERROR(UploadFloat(n1, &w.norm1));
    }
    if (c.family != ModelFamily::kMamba && c.family != ModelFamily::kTnl) {
      HG_ASSIGN_OR_RETURN(HostTensor n2, ck.ReadFloat(p + names.norm2 + ".weight", vec_d));
      HG_RETURN_IF_ERROR(UploadFloat(n2, &w.norm2));
      HG_ASSIGN_OR_RETURN(GatedMlpWeights mlp, ReadGatedMlp(ck, p + "mlp", I_, D_));
      HG_RETURN_IF_ERROR(UploadAct({&mlp.gate, &mlp.up}, &w.mlp_gate_up));
      HG_RETURN_IF_ERROR(UploadAct({&mlp.down}, &w.mlp_down));
    }
    auto read = [&](const std::string& name,
                    std::vector<int64_t> shape) -> absl::StatusOr<HostTensor> {
      return ck.ReadFloat(m + name, shape);
    };
    switch (c.family) {
      case ModelFamily::kHgrn2: {
        HG_ASSIGN_OR_RETURN(HostTensor q, read("q_proj.weight", {D_, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor f, read("f_proj.weight", {D_, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor i, read("i_proj.weight", {D_, D_}));
        HG_RETURN_IF_ERROR(UploadAct({&q, &f, &i}, &w.w_in));
        HG_ASSIGN_OR_RETURN(HostTensor gn, read("g_norm.weight", {D_}));
        HG_RETURN_IF_ERROR(UploadFloat(gn, &w.g_norm));
        HG_ASSIGN_OR_RETURN(HostTensor o, read("o_proj.weight", {D_, D_}));
        HG_RETURN_IF_ERROR(UploadAct({&o}, &w.w_out));
        break;
      }
      case ModelFamily::kHgrn: {
        const int64_t e = mix_width_;
        HG_ASSIGN_OR_RETURN(HostTensor i, read("i_proj.weight", {e, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor f, read("f_proj.weight", {e, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor g, read("g_proj.weight", {e, D_}));
        HG_RETURN_IF_ERROR(UploadAct({&i, &f, &g}, &w.w_in));
        HG_ASSIGN_OR_RETURN(HostTensor gn, read("g_norm.weight", {e}));
        HG_RETURN_IF_ERROR(UploadFloat(gn, &w.g_norm));
        HG_ASSIGN_OR_RETURN(HostTensor o, read("o_proj.weight", {D_, e}));
        HG_RETURN_IF_ERROR(UploadAct({&o}, &w.w_out));
        break;
      }
      case ModelFamily::kGla: {
        const int64_t group = heads_ / kv_heads_;
        const int64_t key_dim = heads_ * dk_, value_dim = heads_ * dv_;
        HG_ASSIGN_OR_RETURN(HostTensor q, read("q_proj.weight", {key_dim, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor k, read("k_proj.weight", {key_dim / group, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor v, read("v_proj.weight", {value_dim / group, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor gk0, read("gk_proj.0.weight", {16, D_}));
        HostTensor g;
        if (c.use_output_gate) {
          HG_ASSIGN_OR_RETURN(g, read("g_proj.weight", {value_dim, D_}));
          HG_RETURN_IF_ERROR(UploadAct({&q, &k, &v, &g, &gk0}, &w.w_in));
        } else {
          HG_RETURN_IF_ERROR(UploadAct({&q, &k, &v, &gk0}, &w.w_in));
        }
        HG_ASSIGN_OR_RETURN(HostTensor gk1, read("gk_proj.1.weight", {key_dim / group, 16}));
        HG_RETURN_IF_ERROR(UploadFloat(gk1, &w.gk_w));
        HG_ASSIGN_OR_RETURN(HostTensor gk1b, read("gk_proj.1.bias", {key_dim / group}));
        HG_RETURN_IF_ERROR(UploadFloat(gk1b, &w.gk_b));
        const std::string gname =
            ck.Has(m + "g_norm_swish_gate.weight") ? "g_norm_swish_gate.weight" : "g_norm.weight";
        HG_ASSIGN_OR_RETURN(HostTensor gn, read(gname, {dv_}));
        HG_RETURN_IF_ERROR(UploadFloat(gn, &w.g_norm));
        HG_ASSIGN_OR_RETURN(HostTensor o, read("o_proj.weight", {D_, value_dim}));
        HG_RETURN_IF_ERROR(UploadAct({&o}, &w.w_out));
        break;
      }
      case ModelFamily::kLlama: {
        const int64_t qd = heads_ * dk_, kvd = kv_heads_ * dk_;
        HG_ASSIGN_OR_RETURN(HostTensor q, read("q_proj.weight", {qd, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor k, read("k_proj.weight", {kvd, D_}));
        HG_ASSIGN_OR_RETURN(HostTensor v, read("v_proj.weight", {kvd, D_}));
        HG_RETURN_IF_ERROR(UploadAct({&q, &k, &v}, &w.w_in));
        HG_ASSIGN_OR_RETURN(HostTensor o, read("o_proj.weight", {D_, qd}));
        HG_RETURN_IF_ERROR(UploadAct({&o}, &w.w_out));
        break;
      }
      case ModelFamily::kTnl: {
        const int64_t e = tnl_head_dim_;
        HG_ASSIGN_OR_RETURN(HostTensor qkvu, read("qkvu_proj.weight", {4 * D_, D_}));
        HG_RETURN_IF_ERROR(UploadAct({&qkvu}, &w.w_in));
        HG_ASSIGN_OR_RETURN(HostTensor o, read("out_proj.weight", {D_, D_}));
        HG_RETURN_IF_ERROR(UploadAct({&o}, &w.w_out));
        if (!c.tnl_lrpe.empty() && c.tnl_lrpe[l]) {
          HG_ASSIGN_OR_RETURN(HostTensor theta, read("lrpe.theta", {heads_, 1, e}));
          HG_RETURN_IF_ERROR(UploadFloat(theta, &w.lrpe_theta));
        }
        HostTensor log_decay;
        log_decay.shape = {heads_};
        for (double decay : TnlDecays(heads_, l, L_)) {
          log_decay.data.push_back(static_cast<float>(std::log(decay)));
        }
        HG_RETURN_IF_ERROR(UploadFloat(log_decay, &w.log_decay));
        info_.num_parameters -= heads_;  // derived from the config, not a weight
        break;
      }
      case ModelFamily::kMamba: {
        const int64_t e = mix_width_, n = c.state_size, r = mamba_dt_rank_, kc = c.conv_kernel;
        HG_ASSIGN_OR_RETURN(HostTensor in, read("in_proj.weight", {2 * e, D_}));
        HG_RETURN_IF_ERROR(UploadAct({&in}, &w.w_in));
        if (c.use_bias) {
          HG_ASSIGN_OR_RETURN(HostTensor ib, read("in_proj.bias", {2 * e}));
          HG_RETURN_IF_ERROR(UploadFloat(ib, &w.in_bias));
          HG_ASSIGN_OR_RETURN(HostTensor ob, read("out_proj.bias", {D_}));
          HG_RETURN_IF_ERROR(UploadFloat(ob, &w.out_bias));
        }
        HG_ASSIGN_OR_RETURN(HostTensor cw, read("conv1d.weight", {e, 1, kc}));
        HG_RETURN_IF_ERROR(UploadFloat(cw, &w.conv_w));
        if (c.use_conv_bias) {
          HG_ASSIGN_OR_RETURN(HostTensor cb, read("conv1d.bias", {e}));
          HG_RETURN_IF_ERROR(UploadFloat(cb, &w.conv_b));
        }
        HG_ASSIGN_OR_RETURN(HostTensor xp, read("x_proj.weight", {r + 2 * n, e}));
        HG_RETURN_IF_ERROR(UploadFloat(xp, &w.x_proj));  // fp32: small, feeds the scan
        HG_ASSIGN_OR_RETURN(HostTensor dtw, read("dt_proj.weight", {e, r}));
        HG_RETURN_IF_ERROR(UploadFloat(dtw, &w.dt_w));  // fp32: its input (xdbc) is fp32
        HG_ASSIGN_OR_RETURN(HostTensor dtb, read("dt_proj.bias", {e}));
        HG_RETURN_IF_ERROR(UploadFloat(dtb, &w.dt_b));
        HG_ASSIGN_OR_RETURN(HostTensor alog, read("A_log", {e, n}));
        HostTensor aneg = alog;
        for (float& x : aneg.data) x = -std::exp(x);
        HG_RETURN_IF_ERROR(UploadFloat(aneg, &w.a_neg));
        HG_ASSIGN_OR_RETURN(HostTensor dsk, read("D", {e}));
        HG_RETURN_IF_ERROR(UploadFloat(dsk, &w.d_skip));
        HG_ASSIGN_OR_RETURN(HostTensor o, read("out_proj.weight", {D_, e}));
        HG_RETURN_IF_ERROR(UploadAct({&o}, &w.w_out));
        break;
      }
    }
    if (!lower_bounds.empty() && l > 0) {
      HostTensor lbt;
      lbt.shape = {static_cast<int64_t>(lower_bounds[l].size())};
      lbt.data = lower_bounds[l];
      HG_RETURN_IF_ERROR(UploadFloat(lbt, &w.lower_bound));
      info_.num_parameters -= lbt.numel();  // derived, counted with model.lower_bounds
    }
  }
  return absl::OkStatus();
}

absl::Status CudaModel::AllocateScratch() {
  const size_t R = kPackRows;
  const size_t es = ActSize(act_);
  auto f32 = [&](DeviceBuffer* b, size_t n) -> absl::Status {
    HG_ASSIGN_OR_RETURN(*b, Alloc(n * sizeof(float)));
    return absl::OkStatus();
  };
  auto act = [&](DeviceBuffer* b, size_t n) -> absl::Status {
    HG_ASSIGN_OR_RETURN(*b, Alloc(n * es));
    return absl::OkStatus();
  };
  HG_RETURN_IF_ERROR(f32(&h_, R * D_));
  HG_RETURN_IF_ERROR(act(&x_, R * D_));
  HG_RETURN_IF_ERROR(f32(&delta_, R * D_));
  const auto fam = config_.family;
  if (fam != ModelFamily::kMamba) {
    HG_RETURN_IF_ERROR(act(&gu_, R * 2 * I_));
    HG_RETURN_IF_ERROR(act(&mlp_, R * I_));
  }
  if (proj_width_ > 0) HG_RETURN_IF_ERROR(f32(&proj_, R * proj_width_));
  HG_RETURN_IF_ERROR(f32(&o_, R * mix_width_));
  HG_RETURN_IF_ERROR(act(&onorm_, R * mix_width_));
  if (fam == ModelFamily::kHgrn2 || fam == ModelFamily::kGla || fam == ModelFamily::kTnl) {
    const size_t qk = R * heads_ * dk_, vv = R * heads_ * dv_;
    HG_RETURN_IF_ERROR(f32(&q_, qk));
    HG_RETURN_IF_ERROR(f32(&k_, qk));
    HG_RETURN_IF_ERROR(f32(&g_, qk));
    HG_RETURN_IF_ERROR(f32(&v_, vv));
    // Chunk states bound how many chunks (short sequences count one each) a pack holds:
    // at least one whole segment's, more while they fit kChunkStateBudget.
    const int64_t chunk_bytes = heads_ * dk_ * dv_ * static_cast<int64_t>(sizeof(float));
    max_pack_chunks_ = std::max<int64_t>(R / kGlaChunk, kChunkStateBudget / chunk_bytes);
    HG_RETURN_IF_ERROR(f32(&chunk_states_, max_pack_chunks_ * heads_ * dk_ * dv_));
    if (fam == ModelFamily::kGla) {
      HG_RETURN_IF_ERROR(f32(&gk_, R * kv_heads_ * dk_));
    }
  }
  if (fam == ModelFamily::kLlama) {
    HG_RETURN_IF_ERROR(act(&qkv_, R * (heads_ + 2 * kv_heads_) * dk_));
    HG_RETURN_IF_ERROR(act(&att_o_, R * heads_ * dk_));
    HG_RETURN_IF_ERROR(f32(&attn_partial_, DecodeAttentionScratchFloats(kDecodeRows, heads_, dk_)));
  }
  if (fam == ModelFamily::kMamba) {
    HG_RETURN_IF_ERROR(f32(&xc_, R * mix_width_));
    HG_RETURN_IF_ERROR(f32(&xdbc_, R * mamba_xdbc_));
    HG_RETURN_IF_ERROR(f32(&dt_, R * mix_width_));
    HG_RETURN_IF_ERROR(act(&y_, R * mix_width_));
  }
  if (max_pack_chunks_ == 0) max_pack_chunks_ = R / kGlaChunk;
  const size_t lr = std::max<size_t>(kLogitRows, kDecodeRows);
  HG_RETURN_IF_ERROR(f32(&logits_, lr * V_));
  HG_RETURN_IF_ERROR(act(&logit_x_, lr * D_));
  // The decode step's row tables: row r is sequence r.
  HG_ASSIGN_OR_RETURN(identity_rows_, Alloc((kDecodeRows + 1) * sizeof(int32_t)));
  {
    int32_t identity[kDecodeRows + 1];
    for (int r = 0; r <= kDecodeRows; ++r) identity[r] = r;
    HG_CUDA_RETURN(
        cudaMemcpy(identity_rows_.get(), identity, sizeof(identity), cudaMemcpyHostToDevice));
  }
  pack_bytes_ = PackTableBytes();
  HG_ASSIGN_OR_RETURN(pack_dev_, Alloc(pack_bytes_));
  HG_CUDA_RETURN(cudaMallocHost(&pack_host_, pack_bytes_));
  HG_ASSIGN_OR_RETURN(pinned_gemm_, PinnedGemm::Create(kPackRows));
  HG_ASSIGN_OR_RETURN(decode_io_, Alloc(sizeof(DecodeIo)));
  HG_CUDA_RETURN(cudaMallocHost(&host_io_, sizeof(DecodeIo)));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CudaModel>> CudaModel::Build(const Checkpoint& checkpoint,
                                                            const ModelConfig& config, int device,
                                                            Act act, int64_t max_context) {
  std::unique_ptr<CudaModel> model(new CudaModel());
  model->config_ = config;
  model->act_ = act;
  HG_ASSIGN_OR_RETURN(model->ctx_, DeviceContext::Create(device));
  DeviceGuard guard(device);
  ModelInfo& info = model->info_;
  info.family = config.family;
  info.vocab_size = config.vocab_size;
  // LLaMA: LoadOptions::max_context when set (RoPE is computed per position and the KV
  // cache grows on demand, so nothing else bounds it); recurrent models are unbounded.
  info.max_context = config.family != ModelFamily::kLlama ? 0
                     : max_context > 0                    ? max_context
                                                          : config.max_position_embeddings;
  info.bos_token_id = config.bos_token_id;
  info.eos_token_id = config.eos_token_id;
  info.backend = absl::StrCat("cuda:", device);
  info.dtype = act == Act::kF32 ? "fp32" : "bf16";
  info.batch_tokens = kPackRows;
  HG_RETURN_IF_ERROR(model->LoadWeights(checkpoint));
  HG_RETURN_IF_ERROR(model->AllocateScratch());
  const char* graphs = std::getenv("HGEVAL_CUDA_GRAPHS");
  model->graphs_enabled_ = graphs == nullptr || std::string(graphs) != "0";
  return model;
}

CudaModel::~CudaModel() {
  DeviceGuard guard(ctx_->device());
  cudaStreamSynchronize(ctx_->stream());
  if (decode_graph_) cudaGraphExecDestroy(decode_graph_);
  if (pack_host_) cudaFreeHost(pack_host_);
  if (host_io_) cudaFreeHost(host_io_);
}

}  // namespace hgeval::cuda
