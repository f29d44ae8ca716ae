// LLaMA (Hugging Face LlamaForCausalLM and fla's "transformer"; specs/models.md §5) on the
// GPU: the fused q | k | v projection, RoPE with the KV-cache write (one kernel), the
// per-sequence KV caches, causal attention (bf16: the flash kernel over every tile of a
// pack; fp32: cuBLAS score tiles one sequence at a time; decode: cache attention in key
// windows that forks of one snapshot read once, decode_attention_plan.h) and o_proj
// (packs: added into the residual stream in its epilogue). The CPU's forward pass:
// engine/cpu/llama.cc.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_mixers.h"
#include "engine/cuda/decode_attention_plan.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

const char* Offset(const void* base, int64_t elements, Act act) {
  return static_cast<const char*>(base) + elements * static_cast<int64_t>(ActSize(act));
}
char* Offset(void* base, int64_t elements, Act act) {
  return static_cast<char*>(base) + elements * static_cast<int64_t>(ActSize(act));
}

class LlamaMixer final : public CudaTokenMixer {
 public:
  LlamaMixer(const ModelConfig& c, Act act)
      : config_(c),
        act_(act),
        heads_(c.num_heads),
        kv_heads_(c.num_kv_heads),
        head_dim_(c.head_dim),
        scale_(1.0f / std::sqrt(static_cast<float>(c.head_dim))) {}
  ~LlamaMixer() override {
    if (plan_host_ != nullptr) cudaFreeHost(plan_host_);
  }

  BlockLayout layout() const override {
    BlockLayout layout;
    layout.kv_row_bytes = kv_heads_ * head_dim_ * static_cast<int64_t>(ActSize(act_));
    layout.bounded_context = true;
    layout.o_proj_adds_to_residual = true;
    return layout;
  }

  absl::Status Load(const Checkpoint& ck, const BlockTensorNames& names,
                    DeviceAllocator& alloc) override {
    const int64_t D = config_.hidden_size;
    const int64_t qd = heads_ * head_dim_, kvd = kv_heads_ * head_dim_;
    layers_.resize(config_.num_layers);
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      Layer& w = layers_[l];
      const std::string m = names.MixerPrefix(l);
      HG_ASSIGN_OR_RETURN(HostTensor q, ck.ReadFloat(m + "q_proj.weight", {qd, D}));
      HG_ASSIGN_OR_RETURN(HostTensor k, ck.ReadFloat(m + "k_proj.weight", {kvd, D}));
      HG_ASSIGN_OR_RETURN(HostTensor v, ck.ReadFloat(m + "v_proj.weight", {kvd, D}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&q, &k, &v}, &w.qkv_proj));
      HG_ASSIGN_OR_RETURN(HostTensor o, ck.ReadFloat(m + "o_proj.weight", {D, qd}));
      HG_RETURN_IF_ERROR(alloc.UploadAct({&o}, &w.o_proj));
    }
    return absl::OkStatus();
  }

  // The KV cache grows with the sequence (BlockLayout::kv_row_bytes); no fixed state.
  int64_t StateFloatsPerLayer() const override { return 0; }

  absl::Status AllocateScratch(DeviceAllocator& alloc) override {
    const size_t R = kPackRows;
    HG_RETURN_IF_ERROR(alloc.Acts(&qkv_, R * (heads_ + 2 * kv_heads_) * head_dim_));
    HG_RETURN_IF_ERROR(alloc.Acts(&att_o_, R * heads_ * head_dim_));
    // The decode attention's windows: as many as the longest context holds, for every row.
    max_windows_ = static_cast<int>(std::max<int64_t>(1, DecodeWindows(max_context_)));
    max_items_ = kDecodeRows * max_windows_;
    HG_RETURN_IF_ERROR(
        alloc.Floats(&attn_partial_,
                     DecodeAttentionScratchFloats(kDecodeRows, heads_, head_dim_, max_windows_)));
    const size_t plan_bytes = DecodeAttentionPlanBytes(max_items_);
    HG_ASSIGN_OR_RETURN(plan_dev_, alloc.Alloc(plan_bytes));
    HG_CUDA_RETURN(cudaMallocHost(&plan_host_, plan_bytes));
    allocator_.emplace(alloc);  // grows the fp32 prefill's score tiles on demand
    return absl::OkStatus();
  }

  // The step's attention plan: a window that several rows' caches hold the same (forks of
  // one snapshot) is read once for all of them.
  absl::Status PrepareDecodeStep(absl::Span<const DecodeStepRow> rows,
                                 cudaStream_t stream) override {
    std::vector<DecodeAttentionRow> plan_rows;
    plan_rows.reserve(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const int64_t keys = rows[r].position + 1;
      if (DecodeWindows(keys) > max_windows_) {
        return absl::InternalError(absl::StrCat("decode row at position ", rows[r].position,
                                                " is past the model's context of ", max_context_));
      }
      plan_rows.push_back({static_cast<int>(r), keys, rows[r].lineage});
    }
    PlanDecodeAttention(plan_rows, DecodeAttentionShareRows(act_, static_cast<int>(head_dim_)),
                        &plan_items_);
    if (plan_items_.size() > static_cast<size_t>(max_items_)) {
      return absl::InternalError("decode attention plan larger than its buffer");
    }
    WriteDecodeAttentionPlan(plan_items_, plan_host_);
    HG_CUDA_RETURN(cudaMemcpyAsync(plan_dev_.get(), plan_host_,
                                   DecodeAttentionPlanBytes(plan_items_.size()),
                                   cudaMemcpyHostToDevice, stream));
    return absl::OkStatus();
  }

  absl::Status Enqueue(const MixerPass& pass) override {
    const Layer& w = layers_[pass.layer];
    const int64_t D = config_.hidden_size;
    const int H = static_cast<int>(heads_), Hkv = static_cast<int>(kv_heads_);
    const int hd = static_cast<int>(head_dim_);
    const int64_t W = (heads_ + 2 * kv_heads_) * head_dim_, mix = heads_ * head_dim_;
    const RowInputs& in = *pass.in;
    HG_RETURN_IF_ERROR(pass.Linear(pass.rows, W, D, MatRef{pass.x, act_, D},
                                   MatRef{w.qkv_proj.get(), act_, D}, qkv_.get(), act_, W));
    HG_CUDA_RETURN(RopeKvWrite(qkv_.get(), act_, pass.rows, H, Hkv, hd, in.positions,
                               config_.rope_theta, in.row_seq, in.kv_ptrs, in.caps, pass.layer,
                               pass.stream));
    if (pass.decode) {
      HG_CUDA_RETURN(DecodeAttention(qkv_.get(), act_, pass.rows, H, Hkv, hd, in.kv_ptrs, in.caps,
                                     in.positions, pass.layer, scale_, plan_dev_.get(), max_items_,
                                     max_windows_, attn_partial_.as<float>(), att_o_.get(),
                                     pass.stream));
    } else {
      HG_RETURN_IF_ERROR(PrefillAttention(pass));
    }
    return pass.ProjectOutput(0, pass.rows, D, mix, MatRef{att_o_.get(), act_, mix},
                              MatRef{w.o_proj.get(), act_, mix});
  }

 private:
  struct Layer {
    DeviceBuffer qkv_proj;  // act [(H + 2 Hkv) hd, D]
    DeviceBuffer o_proj;    // act [D, H hd]
  };

  // Prefill attention of the current pack (its keys are in the caches already).
  absl::Status PrefillAttention(const MixerPass& pass) {
    const int64_t H = heads_, Hkv = kv_heads_, hd = head_dim_, G = H / Hkv;
    const RowInputs& in = *pass.in;
    if (act_ == Act::kBF16 && (hd == 32 || hd == 64 || hd == 128)) {
      // Tensor-core flash attention over every tile of the pack: no score matrix in memory.
      HG_CUDA_RETURN(FlashPrefillAttentionPacked(
          qkv_.get(), *pass.pack, static_cast<int>(H), static_cast<int>(Hkv), static_cast<int>(hd),
          in.kv_ptrs, in.caps, in.positions, pass.layer, scale_, att_o_.get(), pass.stream));
      return absl::OkStatus();
    }
    // fp32 (exactness) path: score tiles through cuBLAS in plain fp32, one sequence at a
    // time (shapes from the sequence alone, so its results do not depend on the pack).
    const int64_t W = (H + 2 * Hkv) * hd, kvw = Hkv * hd;
    const int64_t es = static_cast<int64_t>(ActSize(act_));
    const PackHostView& host = *pass.host;
    for (size_t q = 0; q + 1 < host.seq_row0.size(); ++q) {
      const int64_t row0 = host.seq_row0[q];
      const int64_t rows = host.seq_row0[q + 1] - row0;
      const int64_t pos0 = host.seq_pos0[q];
      const int64_t cap = host.kv_cap[q];
      const void* kl = Offset(host.kv[q], (pass.layer * 2) * cap * kvw, act_);
      const void* vl = Offset(host.kv[q], (pass.layer * 2 + 1) * cap * kvw, act_);
      constexpr int64_t kBudget = 256ll << 20;
      const int64_t tk_max = pos0 + rows;
      int64_t tq = kBudget / (H * tk_max * (4 + es));
      tq = std::clamp<int64_t>(tq, 16, 512);
      tq = std::min<int64_t>(tq, rows);
      HG_RETURN_IF_ERROR(allocator_->Grow(&scores_, H * tq * tk_max * 4));
      HG_RETURN_IF_ERROR(allocator_->Grow(&probs_, H * tq * tk_max * es));
      for (int64_t a = 0; a < rows; a += tq) {
        const int64_t b = std::min<int64_t>(a + tq, rows);
        const int64_t m = b - a, tk = pos0 + b;
        for (int64_t g = 0; g < G; ++g) {
          HG_RETURN_IF_ERROR(GemmNTBatched(
              pass.cublas, m, tk, hd,
              MatRef{Offset(qkv_.get(), (row0 + a) * W + g * hd, act_), act_, W}, G * hd,
              MatRef{kl, act_, kvw}, hd, scores_.as<float>() + g * Hkv * m * tk, Act::kF32, tk,
              m * tk, static_cast<int>(Hkv), scale_));
        }
        HG_CUDA_RETURN(CausalSoftmax(scores_.as<float>(), static_cast<int>(H), static_cast<int>(m),
                                     static_cast<int>(tk), pos0 + a, probs_.get(), act_,
                                     pass.stream));
        for (int64_t g = 0; g < G; ++g) {
          HG_RETURN_IF_ERROR(GemmNNBatched(
              pass.cublas, m, hd, tk,
              MatRef{Offset(probs_.get(), g * Hkv * m * tk, act_), act_, tk}, m * tk,
              MatRef{vl, act_, kvw}, hd, Offset(att_o_.get(), (row0 + a) * H * hd + g * hd, act_),
              act_, H * hd, G * hd, static_cast<int>(Hkv)));
        }
      }
    }
    return absl::OkStatus();
  }

  ModelConfig config_;
  Act act_;
  int64_t heads_, kv_heads_, head_dim_;
  float scale_;
  std::vector<Layer> layers_;
  DeviceBuffer qkv_, att_o_, attn_partial_;
  // The decode attention's plan: its device copy (read by the step's graph) and the pinned
  // host block it is built in (the step waits for the previous one before reusing it).
  int max_windows_ = 1, max_items_ = 0;
  DeviceBuffer plan_dev_;
  void* plan_host_ = nullptr;
  std::vector<DecodeAttentionItem> plan_items_;
  // Grown on demand (fp32 prefill only).
  std::optional<DeviceAllocator> allocator_;
  DeviceBuffer scores_, probs_;
};

}  // namespace

MixerOrError MakeLlamaMixer(const ModelConfig& config, Act act) {
  return std::make_unique<LlamaMixer>(config, act);
}

}  // namespace hgeval::cuda
