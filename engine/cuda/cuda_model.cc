// CudaModel forward passes: batching into the sequence and decode paths, the shared
// block skeleton, the family mixers and the fused log-softmax head.
#include "engine/cuda/cuda_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstddef>
#include <cstring>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/gemm.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

#define HG_LAUNCH(expr) HG_CUDA_RETURN(expr)

MatRef Mat(const void* ptr, Act act, int64_t ld) { return MatRef{ptr, act, ld}; }

const char* Offset(const void* base, int64_t elements, Act act) {
  return static_cast<const char*>(base) + elements * static_cast<int64_t>(ActSize(act));
}
char* Offset(void* base, int64_t elements, Act act) {
  return static_cast<char*>(base) + elements * static_cast<int64_t>(ActSize(act));
}

std::vector<TokenLogprob> TopK(const float* row, int64_t vocab, int k) {
  k = static_cast<int>(std::min<int64_t>(k, vocab));
  std::vector<int32_t> idx(vocab);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [row](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  });
  std::vector<TokenLogprob> out(k);
  for (int i = 0; i < k; ++i) out[i] = TokenLogprob{idx[i], row[idx[i]]};
  return out;
}

}  // namespace

// ---- states ------------------------------------------------------------------------

CudaSequenceState::~CudaSequenceState() = default;

std::unique_ptr<SequenceState> CudaSequenceState::Clone() const {
  DeviceGuard guard(ctx_->device());
  auto copy = std::make_unique<CudaSequenceState>(owner_, ctx_);
  copy->position_ = position_;
  copy->kv_cap_ = kv_cap_;
  auto dup = [&](const DeviceBuffer& src, DeviceBuffer* dst) -> bool {
    if (src.size() == 0) return true;
    auto buf = DeviceBuffer::Make(ctx_->pool(), src.size());
    if (!buf.ok()) return false;
    *dst = std::move(*buf);
    return cudaMemcpyAsync(dst->get(), src.get(), src.size(), cudaMemcpyDeviceToDevice,
                           ctx_->stream()) == cudaSuccess;
  };
  if (!dup(recurrent_, &copy->recurrent_) || !dup(kv_, &copy->kv_) ||
      cudaStreamSynchronize(ctx_->stream()) != cudaSuccess) {
    std::fprintf(stderr, "hgeval cuda: state clone failed (out of device memory?)\n");
    return nullptr;
  }
  return copy;
}

std::unique_ptr<SequenceState> CudaModel::NewState() const {
  DeviceGuard guard(ctx_->device());
  auto st = std::make_unique<CudaSequenceState>(this, ctx_);
  const int64_t floats = RecurrentFloatsPerLayer() * L_;
  if (floats > 0) {
    auto buf = DeviceBuffer::Make(ctx_->pool(), floats * sizeof(float));
    if (!buf.ok() || cudaMemsetAsync(buf->get(), 0, floats * sizeof(float), ctx_->stream()) !=
                         cudaSuccess) {
      std::fprintf(stderr, "hgeval cuda: state allocation failed (out of device memory?)\n");
      return nullptr;
    }
    st->recurrent_ = std::move(*buf);
    cudaStreamSynchronize(ctx_->stream());
  }
  return st;
}

absl::Status CudaModel::EnsureKvCapacity(CudaSequenceState* st, int64_t needed) {
  if (needed <= st->kv_cap_) return absl::OkStatus();
  int64_t cap = std::max<int64_t>({needed, 2 * st->kv_cap_, 256});
  cap = (cap + 255) / 256 * 256;
  const int64_t row_bytes = kv_heads_ * dk_ * static_cast<int64_t>(ActSize(act_));
  HG_ASSIGN_OR_RETURN(DeviceBuffer fresh, Alloc(L_ * 2 * cap * row_bytes));
  if (st->kv_cap_ > 0 && st->position_ > 0) {
    HG_CUDA_RETURN(cudaMemcpy2DAsync(fresh.get(), cap * row_bytes, st->kv_.get(),
                                     st->kv_cap_ * row_bytes, st->position_ * row_bytes,
                                     2 * L_, cudaMemcpyDeviceToDevice, ctx_->stream()));
    HG_CUDA_RETURN(cudaStreamSynchronize(ctx_->stream()));
  }
  st->kv_ = std::move(fresh);
  st->kv_cap_ = cap;
  return absl::OkStatus();
}

// ---- layers ------------------------------------------------------------------------

absl::Status CudaModel::EnqueueMlp(int layer, int rows) {
  const LayerWeights& w = layers_[layer];
  cublasHandle_t cb = ctx_->cublas();
  HG_RETURN_IF_ERROR(GemmNT(cb, rows, 2 * I_, D_, Mat(x_.get(), act_, D_),
                            Mat(w.mlp_gate_up.get(), act_, D_), gu_.get(), act_, 2 * I_));
  HG_LAUNCH(SwiGlu(gu_.get(), rows, static_cast<int>(I_), mlp_.get(), act_, ctx_->stream()));
  HG_RETURN_IF_ERROR(GemmNT(cb, rows, D_, I_, Mat(mlp_.get(), act_, I_),
                            Mat(w.mlp_down.get(), act_, I_), delta_.get(), Act::kF32, D_));
  return absl::OkStatus();
}

absl::Status CudaModel::LlamaPrefillAttention(int layer, int rows, int64_t pos0,
                                              CudaSequenceState* seq) {
  const int64_t H = heads_, Hkv = kv_heads_, hd = dk_, G = H / Hkv;
  const int64_t W = (H + 2 * Hkv) * hd, kvw = Hkv * hd;
  const int64_t cap = seq->kv_cap_;
  const void* kl = Offset(seq->kv_.get(), (layer * 2) * cap * kvw, act_);
  const void* vl = Offset(seq->kv_.get(), (layer * 2 + 1) * cap * kvw, act_);
  if (act_ == Act::kBF16 && (hd == 32 || hd == 64 || hd == 128)) {
    // Tensor-core flash attention: no score matrix in memory.
    HG_LAUNCH(FlashPrefillAttention(qkv_.get(), rows, static_cast<int>(H), static_cast<int>(Hkv),
                                    static_cast<int>(hd), kl, vl, pos0, mixer_scale_,
                                    att_o_.get(), ctx_->stream()));
    return absl::OkStatus();
  }
  // fp32 (exactness) path: score tiles through cuBLAS in plain fp32.
  const int64_t es = static_cast<int64_t>(ActSize(act_));
  constexpr int64_t kBudget = 256ll << 20;
  const int64_t tk_max = pos0 + rows;
  int64_t tq = kBudget / (H * tk_max * (4 + es));
  tq = std::clamp<int64_t>(tq, 16, 512);
  tq = std::min<int64_t>(tq, rows);
  HG_RETURN_IF_ERROR(Grow(&scores_, H * tq * tk_max * 4));
  HG_RETURN_IF_ERROR(Grow(&probs_, H * tq * tk_max * es));
  cublasHandle_t cb = ctx_->cublas();
  for (int64_t a = 0; a < rows; a += tq) {
    const int64_t b = std::min<int64_t>(a + tq, rows);
    const int64_t m = b - a, tk = pos0 + b;
    for (int64_t g = 0; g < G; ++g) {
      HG_RETURN_IF_ERROR(GemmNTBatched(
          cb, m, tk, hd, Mat(Offset(qkv_.get(), a * W + g * hd, act_), act_, W), G * hd,
          Mat(kl, act_, kvw), hd, scores_.as<float>() + g * Hkv * m * tk, Act::kF32, tk, m * tk,
          static_cast<int>(Hkv), mixer_scale_));
    }
    HG_LAUNCH(CausalSoftmax(scores_.as<float>(), static_cast<int>(H), static_cast<int>(m),
                            static_cast<int>(tk), pos0 + a, probs_.get(), act_, ctx_->stream()));
    for (int64_t g = 0; g < G; ++g) {
      HG_RETURN_IF_ERROR(GemmNNBatched(
          cb, m, hd, tk, Mat(Offset(probs_.get(), g * Hkv * m * tk, act_), act_, tk), m * tk,
          Mat(vl, act_, kvw), hd, Offset(att_o_.get(), a * H * hd + g * hd, act_), act_, H * hd,
          G * hd, static_cast<int>(Hkv)));
    }
  }
  return absl::OkStatus();
}

absl::Status CudaModel::EnqueueMixer(int layer, int num_seqs, int seq_len, int64_t pos0,
                                     CudaSequenceState* seq) {
  const LayerWeights& w = layers_[layer];
  const int rows = num_seqs * seq_len;
  const bool decode = seq == nullptr;
  cudaStream_t s = ctx_->stream();
  cublasHandle_t cb = ctx_->cublas();
  const int64_t per_layer = RecurrentFloatsPerLayer();
  float* const* sptrs = cur_.state_ptrs;
  const int H = static_cast<int>(heads_), dk = static_cast<int>(dk_), dv = static_cast<int>(dv_);
  const float eps = static_cast<float>(config_.norm_eps);

  auto gla_recurrence = [&]() -> absl::Status {
    if (decode) {
      HG_LAUNCH(RecurrentGlaStep(q_.as<float>(), k_.as<float>(), g_.as<float>(), v_.as<float>(),
                                 rows, H, dk, dv, mixer_scale_, sptrs, layer * per_layer,
                                 o_.as<float>(), s));
    } else {
      float* state = seq->recurrent_.as<float>() + layer * per_layer;
      HG_LAUNCH(ChunkLocalCumsum(g_.as<float>(), rows, H, dk, s));
      HG_LAUNCH(ChunkGlaStates(k_.as<float>(), g_.as<float>(), v_.as<float>(), rows, H, dk, dv,
                               state, chunk_states_.as<float>(), s));
      HG_LAUNCH(ChunkGlaOutput(q_.as<float>(), k_.as<float>(), g_.as<float>(), v_.as<float>(),
                               chunk_states_.as<float>(), rows, H, dk, dv, mixer_scale_,
                               o_.as<float>(), s));
    }
    return absl::OkStatus();
  };

  switch (config_.family) {
    case ModelFamily::kHgrn2: {
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, proj_width_, D_, Mat(x_.get(), act_, D_),
                                Mat(w.w_in.get(), act_, D_), proj_.get(), Act::kF32,
                                proj_width_));
      if (decode) {
        HG_LAUNCH(Hgrn2DecodeStep(proj_.as<float>(), w.lower_bound.as<float>(), rows, H, dk,
                                  mixer_scale_, sptrs, layer * per_layer, o_.as<float>(), s));
      } else {
        HG_LAUNCH(Hgrn2Gates(proj_.as<float>(), rows, static_cast<int>(D_),
                             w.lower_bound.as<float>(), q_.as<float>(), k_.as<float>(),
                             g_.as<float>(), v_.as<float>(), s));
        HG_RETURN_IF_ERROR(gla_recurrence());
      }
      // g_norm runs through fla's rms_norm_linear with its default eps 1e-5.
      HG_LAUNCH(RmsNormGated(o_.as<float>(), D_, nullptr, 0, w.g_norm.as<float>(), 1e-5f, rows,
                             static_cast<int>(D_), static_cast<int>(D_), onorm_.get(), act_, D_,
                             s));
      break;
    }
    case ModelFamily::kGla: {
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, proj_width_, D_, Mat(x_.get(), act_, D_),
                                Mat(w.w_in.get(), act_, D_), proj_.get(), Act::kF32,
                                proj_width_));
      const int64_t kvk = kv_heads_ * dk_;
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, kvk, 16,
                                Mat(proj_.as<float>() + gla_gk_off_, Act::kF32, proj_width_),
                                Mat(w.gk_w.get(), Act::kF32, 16), gk_.get(), Act::kF32, kvk));
      HG_LAUNCH(AddBias(gk_.as<float>(), kvk, w.gk_b.as<float>(), rows, static_cast<int>(kvk), s));
      HG_LAUNCH(GlaGates(proj_.as<float>(), proj_width_, gla_k_off_, gla_v_off_, gk_.as<float>(),
                         rows, H, static_cast<int>(kv_heads_), dk, dv, 16.0f,
                         config_.clamp_min.has_value(),
                         static_cast<float>(config_.clamp_min.value_or(0.0)), q_.as<float>(),
                         k_.as<float>(), g_.as<float>(), v_.as<float>(), s));
      HG_RETURN_IF_ERROR(gla_recurrence());
      const float* gate = config_.use_output_gate ? proj_.as<float>() + gla_g_off_ : nullptr;
      HG_LAUNCH(RmsNormGated(o_.as<float>(), mix_width_, gate, proj_width_,
                             w.g_norm.as<float>(), eps, rows, static_cast<int>(mix_width_), dv,
                             onorm_.get(), act_, mix_width_, s));
      break;
    }
    case ModelFamily::kHgrn: {
      const int E = static_cast<int>(mix_width_);
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, proj_width_, D_, Mat(x_.get(), act_, D_),
                                Mat(w.w_in.get(), act_, D_), proj_.get(), Act::kF32,
                                proj_width_));
      HG_LAUNCH(HgrnGates(proj_.as<float>(), rows, E, w.lower_bound.as<float>(), s));
      HG_LAUNCH(HgrnScan(proj_.as<float>(), num_seqs, seq_len, E, sptrs, layer * per_layer,
                         o_.as<float>(), s));
      HG_LAUNCH(RmsNormGated(o_.as<float>(), E, proj_.as<float>() + 2 * E, proj_width_,
                             w.g_norm.as<float>(), eps, rows, E, E, onorm_.get(), act_, E, s));
      break;
    }
    case ModelFamily::kLlama: {
      const int Hkv = static_cast<int>(kv_heads_);
      const int64_t W = (heads_ + 2 * kv_heads_) * dk_;
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, W, D_, Mat(x_.get(), act_, D_),
                                Mat(w.w_in.get(), act_, D_), qkv_.get(), act_, W));
      HG_LAUNCH(ApplyRope(qkv_.get(), act_, rows, H, Hkv, dk, cur_.positions,
                          config_.rope_theta, s));
      HG_LAUNCH(KvWrite(qkv_.get(), act_, num_seqs, seq_len, H, Hkv, dk, cur_.kv_ptrs,
                        cur_.caps, cur_.positions, layer, s));
      if (decode) {
        HG_LAUNCH(DecodeAttention(qkv_.get(), act_, rows, H, Hkv, dk, cur_.kv_ptrs,
                                  cur_.caps, cur_.positions, layer,
                                  mixer_scale_, attn_partial_.as<float>(), att_o_.get(), s));
      } else {
        HG_RETURN_IF_ERROR(LlamaPrefillAttention(layer, rows, pos0, seq));
      }
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, D_, mix_width_, Mat(att_o_.get(), act_, mix_width_),
                                Mat(w.w_out.get(), act_, mix_width_), delta_.get(), Act::kF32,
                                D_));
      return absl::OkStatus();
    }
    case ModelFamily::kMamba: {
      const int E = static_cast<int>(mix_width_);
      const int N = static_cast<int>(config_.state_size);
      const int kc = static_cast<int>(config_.conv_kernel);
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, 2 * E, D_, Mat(x_.get(), act_, D_),
                                Mat(w.w_in.get(), act_, D_), proj_.get(), Act::kF32, 2 * E));
      if (w.in_bias.get()) {
        HG_LAUNCH(AddBias(proj_.as<float>(), 2 * E, w.in_bias.as<float>(), rows, 2 * E, s));
      }
      HG_LAUNCH(MambaConv(proj_.as<float>(), num_seqs, seq_len, E, kc, w.conv_w.as<float>(),
                          w.conv_b.as<float>(), sptrs, layer * per_layer, xc_.get(), Act::kF32,
                          s));
      // The conv output, x_proj, dt_proj and the scan stay fp32 in both modes (small
      // next to in_proj/out_proj; the selective scan is sensitive to dt, B and C).
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, mamba_xdbc_, E, Mat(xc_.get(), Act::kF32, E),
                                Mat(w.x_proj.get(), Act::kF32, E), xdbc_.get(), Act::kF32,
                                mamba_xdbc_));
      // dt_proj in fp32 (small: E x R): delta, B and C stay fp32 into the scan.
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, E, mamba_dt_rank_,
                                Mat(xdbc_.get(), Act::kF32, mamba_xdbc_),
                                Mat(w.dt_w.get(), Act::kF32, mamba_dt_rank_), dt_.get(),
                                Act::kF32, E));
      HG_LAUNCH(MambaScan(xc_.as<float>(), dt_.as<float>(), w.dt_b.as<float>(), xdbc_.as<float>(),
                          mamba_xdbc_, static_cast<int>(mamba_dt_rank_), proj_.as<float>(),
                          w.a_neg.as<float>(), w.d_skip.as<float>(), num_seqs, seq_len, E, N,
                          sptrs, layer * per_layer + static_cast<int64_t>(E) * (kc - 1),
                          y_.get(), act_, s));
      HG_RETURN_IF_ERROR(GemmNT(cb, rows, D_, E, Mat(y_.get(), act_, E),
                                Mat(w.w_out.get(), act_, E), delta_.get(), Act::kF32, D_));
      if (w.out_bias.get()) {
        HG_LAUNCH(AddBias(delta_.as<float>(), D_, w.out_bias.as<float>(), rows,
                          static_cast<int>(D_), s));
      }
      return absl::OkStatus();
    }
  }
  // HGRN2, GLA, HGRN: o_proj over the normalised mixer output.
  return GemmNT(cb, rows, D_, mix_width_, Mat(onorm_.get(), act_, mix_width_),
                Mat(w.w_out.get(), act_, mix_width_), delta_.get(), Act::kF32, D_);
}

absl::Status CudaModel::EnqueueLayers(int num_seqs, int seq_len, int64_t pos0,
                                      CudaSequenceState* seq) {
  const int rows = num_seqs * seq_len;
  cudaStream_t s = ctx_->stream();
  const float eps = static_cast<float>(config_.norm_eps);
  const int d = static_cast<int>(D_);
  HG_LAUNCH(EmbedRows(embed_.get(), act_, cur_.ids, rows, d, h_.as<float>(), s));
  for (int l = 0; l < L_; ++l) {
    const LayerWeights& w = layers_[l];
    HG_LAUNCH(AddRmsNorm(h_.as<float>(), l == 0 ? nullptr : delta_.as<float>(),
                         w.norm1.as<float>(), eps, rows, d, x_.get(), act_, s));
    HG_RETURN_IF_ERROR(EnqueueMixer(l, num_seqs, seq_len, pos0, seq));
    if (config_.family != ModelFamily::kMamba) {
      HG_LAUNCH(AddRmsNorm(h_.as<float>(), delta_.as<float>(), w.norm2.as<float>(), eps, rows, d,
                           x_.get(), act_, s));
      HG_RETURN_IF_ERROR(EnqueueMlp(l, rows));
    }
  }
  HG_LAUNCH(AddRmsNorm(h_.as<float>(), delta_.as<float>(), final_norm_.as<float>(), eps, rows, d,
                       x_.get(), act_, s));
  return absl::OkStatus();
}

// ---- host staging layout --------------------------------------------------------------

namespace {
struct Stage {
  int32_t* ids;
  int64_t* positions;
  float* lp;
  int32_t* am;
  int32_t* targets;
  int32_t* row_idx;
  void** state_ptrs;
  void** kv_ptrs;
  int64_t* caps;
};
Stage StageOf(void* base) {
  const size_t lr = std::max(kLogitRows, kDecodeRows);
  char* p = static_cast<char*>(base);
  Stage s;
  s.ids = reinterpret_cast<int32_t*>(p);
  p += kSegmentRows * sizeof(int32_t);
  s.positions = reinterpret_cast<int64_t*>(p);
  p += kSegmentRows * sizeof(int64_t);
  s.lp = reinterpret_cast<float*>(p);
  p += lr * 8;
  s.am = reinterpret_cast<int32_t*>(p);
  p += lr * 8;
  s.targets = reinterpret_cast<int32_t*>(p);
  p += lr * 8;
  s.row_idx = reinterpret_cast<int32_t*>(p);
  p += lr * 8;
  s.state_ptrs = reinterpret_cast<void**>(p);
  p += kDecodeRows * sizeof(void*);
  s.kv_ptrs = reinterpret_cast<void**>(p);
  p += kDecodeRows * sizeof(void*);
  s.caps = reinterpret_cast<int64_t*>(p);
  return s;
}
}  // namespace

// ---- paths -----------------------------------------------------------------------------

absl::Status CudaModel::RunSequence(const ForwardItem& item, ForwardOutput* out) {
  auto* st = static_cast<CudaSequenceState*>(item.state);
  cudaStream_t s = ctx_->stream();
  const int64_t T = static_cast<int64_t>(item.tokens.size());
  if (config_.family == ModelFamily::kLlama) {
    HG_RETURN_IF_ERROR(EnsureKvCapacity(st, st->position_ + T));
  }
  Stage stage = StageOf(host_stage_);
  std::vector<float> row_buf;
  for (int64_t s0 = 0; s0 < T; s0 += kSegmentRows) {
    const int n = static_cast<int>(std::min<int64_t>(kSegmentRows, T - s0));
    const int64_t pos0 = st->position_;
    HG_CUDA_RETURN(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) {
      stage.ids[i] = item.tokens[s0 + i];
      stage.positions[i] = pos0 + i;
    }
    stage.state_ptrs[0] = st->recurrent_.get();
    stage.kv_ptrs[0] = st->kv_.get();
    stage.caps[0] = st->kv_cap_;
    cur_ = {ids_.as<int32_t>(), positions_.as<int64_t>(), state_ptrs_.as<float*>(),
            kv_ptrs_.as<void*>(), kv_caps_.as<int64_t>()};
    HG_CUDA_RETURN(cudaMemcpyAsync(ids_.get(), stage.ids, n * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, s));
    HG_CUDA_RETURN(cudaMemcpyAsync(positions_.get(), stage.positions, n * sizeof(int64_t),
                                   cudaMemcpyHostToDevice, s));
    HG_CUDA_RETURN(cudaMemcpyAsync(state_ptrs_.get(), stage.state_ptrs, sizeof(void*),
                                   cudaMemcpyHostToDevice, s));
    HG_CUDA_RETURN(cudaMemcpyAsync(kv_ptrs_.get(), stage.kv_ptrs, sizeof(void*),
                                   cudaMemcpyHostToDevice, s));
    HG_CUDA_RETURN(cudaMemcpyAsync(kv_caps_.get(), stage.caps, sizeof(int64_t),
                                   cudaMemcpyHostToDevice, s));
    HG_RETURN_IF_ERROR(EnqueueLayers(1, n, pos0, st));
    st->position_ += n;

    // Rows of this segment that need logits.
    std::vector<int32_t> rows;
    for (int i = 0; i < n; ++i) {
      const int64_t t = s0 + i;
      const bool scored = !item.targets.empty() && item.targets[t] >= 0;
      const bool last = (item.want_last_logprobs || item.want_last_argmax) && t == T - 1;
      if (scored || last) rows.push_back(i);
    }
    for (size_t c0 = 0; c0 < rows.size(); c0 += kLogitRows) {
      const int c = static_cast<int>(std::min<size_t>(kLogitRows, rows.size() - c0));
      HG_CUDA_RETURN(cudaStreamSynchronize(s));
      bool any_full = false;
      for (int j = 0; j < c; ++j) {
        const int64_t t = s0 + rows[c0 + j];
        stage.row_idx[j] = rows[c0 + j];
        stage.targets[j] = item.targets.empty() ? -1 : item.targets[t];
        if ((item.want_last_logprobs && t == T - 1) || item.top_k > 0) any_full = true;
      }
      HG_CUDA_RETURN(cudaMemcpyAsync(row_idx_.get(), stage.row_idx, c * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, s));
      HG_CUDA_RETURN(cudaMemcpyAsync(targets_.get(), stage.targets, c * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, s));
      HG_LAUNCH(GatherRows(x_.get(), row_idx_.as<int32_t>(), c, static_cast<int>(D_),
                           logit_x_.get(), act_, s));
      HG_RETURN_IF_ERROR(GemmNT(ctx_->cublas(), c, V_, D_, Mat(logit_x_.get(), act_, D_),
                                Mat(lm_head_.get(), act_, D_), logits_.get(), Act::kF32, V_));
      HG_LAUNCH(LogSoftmaxGather(logits_.as<float>(), c, static_cast<int>(V_),
                                 targets_.as<int32_t>(), lp_.as<float>(), am_.as<int32_t>(),
                                 any_full, s));
      HG_CUDA_RETURN(cudaMemcpyAsync(stage.lp, lp_.get(), c * sizeof(float),
                                     cudaMemcpyDeviceToHost, s));
      HG_CUDA_RETURN(cudaMemcpyAsync(stage.am, am_.get(), c * sizeof(int32_t),
                                     cudaMemcpyDeviceToHost, s));
      HG_CUDA_RETURN(cudaStreamSynchronize(s));
      for (int j = 0; j < c; ++j) {
        const int64_t t = s0 + rows[c0 + j];
        const int32_t target = stage.targets[j];
        const bool last = item.want_last_logprobs && t == T - 1;
        if (item.want_last_argmax && t == T - 1) out->last_argmax = stage.am[j];
        const bool need_row = last || (item.top_k > 0 && target >= 0);
        if (need_row) {
          row_buf.resize(V_);
          HG_CUDA_RETURN(cudaMemcpy(row_buf.data(), logits_.as<float>() + j * V_,
                                    V_ * sizeof(float), cudaMemcpyDeviceToHost));
          if (last) out->last_logprobs = row_buf;
        }
        if (target >= 0) {
          out->logprob[t] = stage.lp[j];
          out->argmax[t] = stage.am[j];
          out->is_greedy[t] = stage.am[j] == target ? 1 : 0;
          if (item.top_k > 0) out->top_k[t] = TopK(row_buf.data(), V_, item.top_k);
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CudaModel::EnqueueDecodeStep() {
  HG_RETURN_IF_ERROR(EnqueueLayers(kDecodeRows, 1, 0, nullptr));
  HG_RETURN_IF_ERROR(GemmNT(ctx_->cublas(), kDecodeRows, V_, D_, Mat(x_.get(), act_, D_),
                            Mat(lm_head_.get(), act_, D_), logits_.get(), Act::kF32, V_));
  DecodeIo* io = decode_io_.as<DecodeIo>();
  HG_LAUNCH(LogSoftmaxGather(logits_.as<float>(), kDecodeRows, static_cast<int>(V_),
                             io->targets, io->lp, io->am, true, ctx_->stream()));
  return absl::OkStatus();
}

absl::Status CudaModel::RunDecodeGroup(absl::Span<const ForwardItem* const> items,
                                       absl::Span<ForwardOutput* const> outs) {
  cudaStream_t s = ctx_->stream();
  const int n = static_cast<int>(items.size());
  if (config_.family == ModelFamily::kLlama) {
    for (const ForwardItem* it : items) {
      auto* st = static_cast<CudaSequenceState*>(it->state);
      HG_RETURN_IF_ERROR(EnsureKvCapacity(st, st->position_ + 1));
    }
  }
  HG_CUDA_RETURN(cudaStreamSynchronize(s));
  Stage stage = StageOf(host_stage_);
  for (int r = 0; r < kDecodeRows; ++r) {
    if (r < n) {
      const ForwardItem& it = *items[r];
      auto* st = static_cast<CudaSequenceState*>(it.state);
      stage.ids[r] = it.tokens[0];
      stage.positions[r] = st->position_;
      stage.state_ptrs[r] = st->recurrent_.get();
      stage.kv_ptrs[r] = st->kv_.get();
      stage.caps[r] = st->kv_cap_;
      stage.targets[r] = it.targets.empty() ? -1 : it.targets[0];
    } else {
      stage.ids[r] = 0;
      stage.positions[r] = 0;
      stage.state_ptrs[r] = nullptr;
      stage.kv_ptrs[r] = nullptr;
      stage.caps[r] = 0;
      stage.targets[r] = -1;
    }
  }
  // One packed upload per step (pinned -> device).
  DecodeIo* hio = static_cast<DecodeIo*>(host_io_);
  for (int r = 0; r < kDecodeRows; ++r) {
    hio->ids[r] = stage.ids[r];
    hio->targets[r] = stage.targets[r];
    hio->positions[r] = stage.positions[r];
    hio->state_ptrs[r] = static_cast<float*>(stage.state_ptrs[r]);
    hio->kv_ptrs[r] = stage.kv_ptrs[r];
    hio->caps[r] = stage.caps[r];
  }
  DecodeIo* dio = decode_io_.as<DecodeIo>();
  cur_ = {dio->ids, dio->positions, dio->state_ptrs, dio->kv_ptrs, dio->caps};
  HG_CUDA_RETURN(cudaMemcpyAsync(dio, hio, offsetof(DecodeIo, lp), cudaMemcpyHostToDevice, s));

  if (graphs_enabled_ && decode_graph_ == nullptr && decode_steps_ > 0) {
    // Capture after one eager step, so cuBLAS has set itself up outside the capture.
    cudaGraph_t graph = nullptr;
    HG_CUDA_RETURN(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const absl::Status enq = EnqueueDecodeStep();
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (enq.ok() && end == cudaSuccess &&
        cudaGraphInstantiate(&decode_graph_, graph, 0) == cudaSuccess) {
      cudaGraphDestroy(graph);
    } else {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      decode_graph_ = nullptr;
      graphs_enabled_ = false;
      std::fprintf(stderr, "hgeval cuda: decode graph capture failed (%s); running eagerly\n",
                   enq.ok() ? cudaGetErrorString(end) : std::string(enq.message()).c_str());
    }
  }
  if (decode_graph_ != nullptr) {
    HG_CUDA_RETURN(cudaGraphLaunch(decode_graph_, s));
  } else {
    HG_RETURN_IF_ERROR(EnqueueDecodeStep());
  }
  ++decode_steps_;
  HG_CUDA_RETURN(cudaMemcpyAsync(hio->lp, dio->lp, sizeof(DecodeIo) - offsetof(DecodeIo, lp),
                                 cudaMemcpyDeviceToHost, s));
  HG_CUDA_RETURN(cudaStreamSynchronize(s));
  for (int r = 0; r < kDecodeRows; ++r) {
    stage.lp[r] = hio->lp[r];
    stage.am[r] = hio->am[r];
  }
  std::vector<float> row_buf;
  for (int r = 0; r < n; ++r) {
    const ForwardItem& it = *items[r];
    ForwardOutput* out = outs[r];
    static_cast<CudaSequenceState*>(it.state)->position_ += 1;
    const int32_t target = stage.targets[r];
    if (it.want_last_argmax) out->last_argmax = stage.am[r];
    const bool need_row = it.want_last_logprobs || (it.top_k > 0 && target >= 0);
    if (need_row) {
      row_buf.resize(V_);
      HG_CUDA_RETURN(cudaMemcpy(row_buf.data(), logits_.as<float>() + r * V_, V_ * sizeof(float),
                                cudaMemcpyDeviceToHost));
      if (it.want_last_logprobs) out->last_logprobs = row_buf;
    }
    if (target >= 0) {
      out->logprob[0] = stage.lp[r];
      out->argmax[0] = stage.am[r];
      out->is_greedy[0] = stage.am[r] == target ? 1 : 0;
      if (it.top_k > 0) out->top_k[0] = TopK(row_buf.data(), V_, it.top_k);
    }
  }
  return absl::OkStatus();
}

absl::Status CudaModel::Forward(absl::Span<const ForwardItem> items,
                                absl::Span<ForwardOutput> outputs) {
  if (outputs.size() != items.size()) {
    return absl::InvalidArgumentError("Forward: outputs.size() must equal items.size()");
  }
  DeviceGuard guard(ctx_->device());
  absl::flat_hash_set<const SequenceState*> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& it = items[i];
    auto* st = dynamic_cast<CudaSequenceState*>(it.state);
    if (st == nullptr || st->owner() != this) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i, " has no state made by this model"));
    }
    if (!seen.insert(st).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i, " shares its state with another item"));
    }
    if (!it.targets.empty() && it.targets.size() != it.tokens.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i, " has ", it.targets.size(), " targets for ",
                       it.tokens.size(), " tokens"));
    }
    if (it.tokens.empty() &&
        (it.want_last_logprobs || it.want_last_argmax || !it.targets.empty())) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i, " asks for log-probabilities but feeds no tokens"));
    }
    if (it.top_k < 0) return absl::InvalidArgumentError("Forward: top_k must be >= 0");
    const int64_t end = st->position() + static_cast<int64_t>(it.tokens.size());
    if (info_.max_context > 0 && end > info_.max_context) {
      return absl::InvalidArgumentError(absl::StrCat(
          "item ", i, ": ", st->position(), " consumed + ", it.tokens.size(),
          " new tokens = ", end, " exceeds the model's maximum context of ", info_.max_context,
          " tokens (max_position_embeddings)"));
    }
    for (int32_t tok : it.tokens) {
      if (tok < 0 || tok >= V_) {
        return absl::InvalidArgumentError(absl::StrCat("Forward: item ", i, " token ", tok,
                                                       " is outside the vocabulary [0, ", V_,
                                                       ")"));
      }
    }
    for (int32_t tgt : it.targets) {
      if (tgt >= V_) {
        return absl::InvalidArgumentError(absl::StrCat("Forward: item ", i, " target ", tgt,
                                                       " is outside the vocabulary"));
      }
    }
  }
  std::vector<const ForwardItem*> decode_items;
  std::vector<ForwardOutput*> decode_outs;
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& it = items[i];
    ForwardOutput& out = outputs[i];
    const size_t T = it.tokens.size();
    out.logprob.assign(T, 0.0f);
    out.is_greedy.assign(T, 0);
    out.argmax.assign(T, -1);
    out.top_k.clear();
    if (it.top_k > 0) out.top_k.resize(T);
    out.last_logprobs.clear();
    out.last_argmax = -1;
    if (T == 1) {
      decode_items.push_back(&it);
      decode_outs.push_back(&out);
    }
  }
  for (size_t g0 = 0; g0 < decode_items.size(); g0 += kDecodeRows) {
    const size_t n = std::min<size_t>(kDecodeRows, decode_items.size() - g0);
    HG_RETURN_IF_ERROR(RunDecodeGroup(absl::MakeConstSpan(decode_items).subspan(g0, n),
                                      absl::MakeConstSpan(decode_outs).subspan(g0, n)));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].tokens.size() >= 2) HG_RETURN_IF_ERROR(RunSequence(items[i], &outputs[i]));
  }
  return absl::OkStatus();
}

}  // namespace hgeval::cuda
