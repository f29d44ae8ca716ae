// The CUDA language model: one class for all six families (HGRN2, HGRN, GLA, LLaMA,
// Mamba, TNL). The block skeleton, MLP, head and batching are shared; the token mixer is
// chosen by family.
//
// Execution paths (chosen per item from the item alone, so an item's results never
// depend on its batch companions):
// - packed path (items feeding >= 2 tokens): items are cut into segments of at most
//   kPackRows tokens at fixed offsets from their own start, and many items' segments run
//   as one forward over their concatenated rows (varlen: per-sequence offsets, chunk and
//   tile tables). GEMMs go through PinnedGemm (one cuBLASLt algorithm per call site for
//   every M), the recurrences and attention work per sequence from each sequence's own
//   start, so a row's result does not depend on what was packed with it;
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
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/model.h"

namespace hgeval::cuda {

// Rows (tokens) of one packed forward; also the segment length of longer items.
constexpr int kPackRows = 16384;
constexpr int kDecodeRows = 32;
// Rows whose logits are computed at once (fp32 [kLogitRows, vocab] scratch).
constexpr int kLogitRows = 512;
// Device memory for the chunkwise recurrences' per-chunk states of one pack.
constexpr int64_t kChunkStateBudget = 1ll << 30;

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

// Device inputs the layer kernels read (the pack's tables or the decode block).
struct RowInputs {
  const int32_t* ids = nullptr;
  const int64_t* positions = nullptr;
  float* const* state_ptrs = nullptr;
  void* const* kv_ptrs = nullptr;
  const int64_t* caps = nullptr;
  const int32_t* seq_row0 = nullptr;  // [num_seqs + 1]
  const int32_t* row_seq = nullptr;   // [rows]
  // Where each sequence's state goes after the pass (null: back to state_ptrs; a null
  // entry: nowhere, for items continuing from a read-only start).
  float* const* out_ptrs = nullptr;
};

// One segment of an item in a pack: tokens [offset, offset + length) of items[item].
struct PackSegment {
  size_t item = 0;
  int64_t offset = 0;
  int64_t length = 0;
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
  DeviceBuffer norm1, norm2;           // fp32 [D] (Mamba: norm1 only)
  DeviceBuffer mlp_gate_up, mlp_down;  // act [2I, D], [D, I]
  DeviceBuffer w_in;                   // act: fused input projection of the mixer
  DeviceBuffer w_out;                  // act: output projection [D, *]
  DeviceBuffer g_norm;                 // fp32
  DeviceBuffer lower_bound;            // fp32 [D] (HGRN2/HGRN, layers > 0)
  // GLA: gk_proj.1 (fp32).
  DeviceBuffer gk_w, gk_b;
  // Mamba.
  DeviceBuffer in_bias, out_bias, conv_w, conv_b, x_proj, dt_w, dt_b, a_neg, d_skip;
  // TNL: LRPE angles (fp32 [H * e], LRPE layers only) and log decay per head (fp32 [H]).
  DeviceBuffer lrpe_theta, log_decay;
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
  absl::Status Forward(absl::Span<const ForwardItem> given,
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

  // Bytes of the pack tables (host and device each).
  size_t PackTableBytes() const;
  // Per-sequence state sizes.
  int64_t RecurrentFloatsPerLayer() const;
  absl::Status EnsureKvCapacity(CudaSequenceState* st, int64_t needed);

  // Splits the multi-token items into segments and runs them as packs.
  absl::Status RunPacked(absl::Span<const ForwardItem> items, absl::Span<ForwardOutput> outputs,
                         absl::Span<const size_t> packed_items);
  absl::Status RunPack(absl::Span<const ForwardItem> items, absl::Span<ForwardOutput> outputs,
                       absl::Span<const PackSegment> segments);
  absl::Status RunDecodeGroup(absl::Span<const ForwardItem* const> items,
                              absl::Span<ForwardOutput* const> outs);
  // Enqueues the whole decode step over kDecodeRows rows (inputs already on the device).
  absl::Status EnqueueDecodeStep();
  // Runs the layers over `rows` rows of `num_seqs` sequences in scratch (h -> final normed
  // x). Decode: one row per sequence; otherwise the pack in pack_.
  absl::Status EnqueueLayers(int rows, int num_seqs, bool decode);
  absl::Status EnqueueMixer(int layer, int rows, int num_seqs, bool decode);
  absl::Status EnqueueMlp(int layer, int rows);
  absl::Status LlamaPrefillAttention(int layer);
  // C = A W^T: the decode step's fixed shape through cublasGemmEx, packs through the
  // pinned algorithms.
  absl::Status Linear(int64_t m, int64_t n, int64_t k, MatRef a, MatRef w, void* c, Act c_act,
                      int64_t ldc);

  ModelInfo info_;
  ModelConfig config_;
  Act act_ = Act::kF32;
  std::shared_ptr<DeviceContext> ctx_;

  // Shapes.
  int64_t D_ = 0, V_ = 0, L_ = 0, I_ = 0;
  int64_t heads_ = 0, kv_heads_ = 0, dk_ = 0, dv_ = 0;  // GLA-form heads (HGRN2/GLA), LLaMA
  int64_t proj_width_ = 0;                              // fp32 projection output width per row
  int64_t mix_width_ = 0;  // mixer output width before o_proj (HGRN: E, GLA: Dv, ...)
  int64_t gla_k_off_ = 0, gla_v_off_ = 0, gla_g_off_ = 0, gla_gk_off_ = 0;
  int64_t mamba_dt_rank_ = 0, mamba_xdbc_ = 0;
  int64_t tnl_head_dim_ = 0;  // TNL: e = D / H (dk_ is 2e when any layer has LRPE)
  float mixer_scale_ = 1.0f;

  // Weights.
  DeviceBuffer embed_, lm_head_, final_norm_;
  std::vector<LayerWeights> layers_;

  // Scratch (fixed at build so graphs stay valid).
  DeviceBuffer h_, x_, delta_, proj_, q_, k_, g_, v_, o_, onorm_, gu_, mlp_, chunk_states_;
  DeviceBuffer gk_, qkv_, att_o_, attn_partial_, xc_, xdbc_, dt_, y_;
  DeviceBuffer logits_, logit_x_;
  DeviceBuffer identity_rows_;  // int32 0, 1, ..., kDecodeRows: the decode step's tables
  // Grown on demand (fp32 LLaMA prefill only).
  DeviceBuffer scores_, probs_;

  DeviceBuffer decode_io_;
  void* host_io_ = nullptr;
  RowInputs cur_;
  bool decoding_ = false;

  // Pack tables: one pinned host block and its device mirror (same layout), uploaded with
  // one copy per pack; pack_ views the device side.
  DeviceBuffer pack_dev_;
  void* pack_host_ = nullptr;
  size_t pack_bytes_ = 0;
  int64_t max_pack_chunks_ = 0;
  PackView pack_;
  // Host copies of the current pack's per-sequence data (fp32 LLaMA attention).
  std::vector<int32_t> pack_seq_row0_;
  std::vector<int64_t> pack_seq_pos0_;
  std::vector<const CudaSequenceState*> pack_states_;

  std::unique_ptr<PinnedGemm> pinned_gemm_;

  // Decode graph.
  cudaGraphExec_t decode_graph_ = nullptr;
  bool graphs_enabled_ = true;
  int64_t decode_steps_ = 0;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_CUDA_MODEL_H_
