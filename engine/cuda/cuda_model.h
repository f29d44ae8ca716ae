// The CUDA language model: one class for all five families (HGRN2, HGRN, GLA, LLaMA,
// Mamba). The block skeleton, MLP, head and batching are shared; the token mixer is
// chosen by family.
//
// Execution paths (chosen per item from the item alone, so an item's results never
// depend on its batch companions):
// - sequence path (items feeding >= 2 tokens): the item runs alone, in segments of at
//   most kSegmentRows tokens, with GEMMs over the segment and chunkwise recurrences;
// - decode path (items feeding exactly 1 token): up to kDecodeRows items run together as
//   a fixed-shape step (padded rows, replayed from a CUDA graph); every kernel computes a
//   row from that row's data only, with a reduction order fixed by the padded shape.
#ifndef HGEVAL_ENGINE_CUDA_CUDA_MODEL_H_
#define HGEVAL_ENGINE_CUDA_CUDA_MODEL_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/device.h"
#include "engine/cuda/kernels.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/model.h"

namespace hgeval::cuda {

constexpr int kSegmentRows = 4096;
constexpr int kDecodeRows = 32;
constexpr int kLogitRows = 256;

class CudaModel;

// Per-step inputs and outputs of the decode path, uploaded / read back in one copy each.
struct DecodeIo {
  int64_t positions[kDecodeRows];
  float* state_ptrs[kDecodeRows];
  void* kv_ptrs[kDecodeRows];
  int64_t caps[kDecodeRows];
  int32_t ids[kDecodeRows];
  int32_t targets[kDecodeRows];
  // Outputs (from here on: device -> host).
  float lp[kDecodeRows];
  int32_t am[kDecodeRows];
};

// Device inputs the layer kernels read (the sequence path's buffers or the decode block).
struct RowInputs {
  const int32_t* ids = nullptr;
  const int64_t* positions = nullptr;
  float* const* state_ptrs = nullptr;
  void* const* kv_ptrs = nullptr;
  const int64_t* caps = nullptr;
};

class CudaSequenceState : public SequenceState {
 public:
  CudaSequenceState(const CudaModel* owner, std::shared_ptr<DeviceContext> ctx)
      : owner_(owner), ctx_(std::move(ctx)) {}
  ~CudaSequenceState() override;
  int64_t position() const override { return position_; }
  std::unique_ptr<SequenceState> Clone() const override;
  size_t bytes() const override { return recurrent_.size() + kv_.size(); }

  const CudaModel* owner() const { return owner_; }

 private:
  friend class CudaModel;

  const CudaModel* owner_;
  std::shared_ptr<DeviceContext> ctx_;  // keeps the pool alive while the state lives
  int64_t position_ = 0;
  DeviceBuffer recurrent_;  // fp32, all layers (recurrent families)
  DeviceBuffer kv_;         // LLaMA: [L][2][kv_cap_][Hkv][hd] of the activation dtype
  int64_t kv_cap_ = 0;
};

// Device weights of one layer. Unused members stay empty.
struct LayerWeights {
  DeviceBuffer norm1, norm2;          // fp32 [D] (Mamba: norm1 only)
  DeviceBuffer mlp_gate_up, mlp_down; // act [2I, D], [D, I]
  DeviceBuffer w_in;                  // act: fused input projection of the mixer
  DeviceBuffer w_out;                 // act: output projection [D, *]
  DeviceBuffer g_norm;                // fp32
  DeviceBuffer lower_bound;           // fp32 [D] (HGRN2/HGRN, layers > 0)
  // GLA: gk_proj.1 (fp32).
  DeviceBuffer gk_w, gk_b;
  // Mamba.
  DeviceBuffer in_bias, out_bias, conv_w, conv_b, x_proj, dt_w, dt_b, a_neg, d_skip;
};

class CudaModel : public Model {
 public:
  static absl::StatusOr<std::unique_ptr<CudaModel>> Build(const Checkpoint& checkpoint,
                                                         const ModelConfig& config, int device,
                                                         Act act, int64_t max_context = 0);
  ~CudaModel() override;

  const ModelInfo& info() const override { return info_; }
  const ModelConfig& config() const override { return config_; }
  std::unique_ptr<SequenceState> NewState() const override;
  absl::Status Forward(absl::Span<const ForwardItem> items,
                       absl::Span<ForwardOutput> outputs) override;

  // Device memory held by this model (weights, scratch, states), and its peak.
  size_t device_bytes_in_use() const { return ctx_->pool()->bytes_in_use(); }
  size_t peak_device_bytes() const { return ctx_->pool()->peak_bytes_in_use(); }
  void ResetPeakDeviceBytes() { ctx_->pool()->ResetPeak(); }
  DeviceContext* context() const { return ctx_.get(); }
  std::string device_name() const { return ctx_->name(); }

 private:
  friend class CudaSequenceState;
  CudaModel() = default;

  absl::Status LoadWeights(const Checkpoint& checkpoint);
  absl::Status AllocateScratch();
  absl::Status UploadFloat(const HostTensor& t, DeviceBuffer* out);
  absl::Status UploadAct(const std::vector<const HostTensor*>& parts, DeviceBuffer* out);
  absl::StatusOr<DeviceBuffer> Alloc(size_t bytes);
  absl::Status Grow(DeviceBuffer* buf, size_t bytes);

  // Per-sequence state sizes.
  int64_t RecurrentFloatsPerLayer() const;
  absl::Status EnsureKvCapacity(CudaSequenceState* st, int64_t needed);

  absl::Status RunSequence(const ForwardItem& item, ForwardOutput* out);
  absl::Status RunDecodeGroup(absl::Span<const ForwardItem* const> items,
                              absl::Span<ForwardOutput* const> outs);
  // Enqueues the whole decode step over kDecodeRows rows (inputs already on the device).
  absl::Status EnqueueDecodeStep();
  // Runs the layers over `rows` rows in scratch (h -> final normed x). Sequence path:
  // num_seqs = 1, rows = seq_len. Decode: num_seqs = rows, seq_len = 1.
  absl::Status EnqueueLayers(int num_seqs, int seq_len, int64_t pos0, CudaSequenceState* seq);
  absl::Status EnqueueMixer(int layer, int num_seqs, int seq_len, int64_t pos0,
                            CudaSequenceState* seq);
  absl::Status EnqueueMlp(int layer, int rows);
  absl::Status LlamaPrefillAttention(int layer, int rows, int64_t pos0, CudaSequenceState* seq);

  ModelInfo info_;
  ModelConfig config_;
  Act act_ = Act::kF32;
  std::shared_ptr<DeviceContext> ctx_;

  // Shapes.
  int64_t D_ = 0, V_ = 0, L_ = 0, I_ = 0;
  int64_t heads_ = 0, kv_heads_ = 0, dk_ = 0, dv_ = 0;  // GLA-form heads (HGRN2/GLA), LLaMA
  int64_t proj_width_ = 0;   // fp32 projection output width per row
  int64_t mix_width_ = 0;    // mixer output width before o_proj (HGRN: E, GLA: Dv, ...)
  int64_t gla_k_off_ = 0, gla_v_off_ = 0, gla_g_off_ = 0, gla_gk_off_ = 0;
  int64_t mamba_dt_rank_ = 0, mamba_xdbc_ = 0;
  float mixer_scale_ = 1.0f;

  // Weights.
  DeviceBuffer embed_, lm_head_, final_norm_;
  std::vector<LayerWeights> layers_;

  // Scratch (fixed at build so graphs stay valid).
  DeviceBuffer h_, x_, delta_, proj_, q_, k_, g_, v_, o_, onorm_, gu_, mlp_, chunk_states_;
  DeviceBuffer gk_, qkv_, att_o_, attn_partial_, xc_, xdbc_, dt_, y_;
  DeviceBuffer logits_, logit_x_, lp_, am_;
  DeviceBuffer ids_, positions_, targets_, row_idx_;
  DeviceBuffer state_ptrs_, kv_ptrs_, kv_caps_;
  // Grown on demand (sequence path only).
  DeviceBuffer scores_, probs_;

  DeviceBuffer decode_io_;
  void* host_io_ = nullptr;
  RowInputs cur_;

  // Pinned host staging.
  void* host_stage_ = nullptr;
  size_t host_stage_bytes_ = 0;

  // Decode graph.
  cudaGraphExec_t decode_graph_ = nullptr;
  bool graphs_enabled_ = true;
  int64_t decode_steps_ = 0;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_CUDA_MODEL_H_
