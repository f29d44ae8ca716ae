// The CUDA language model: the skeleton shared by all six families (HGRN2, HGRN, GLA,
// LLaMA, Mamba, TNL): embedding, the blocks' norms and MLP, the final norm, the head,
// packing and decode graphs. Each family's token mixer (weights, state layout, scratch,
// kernels) is a CudaTokenMixer in the family's own file (token_mixer.h, cuda_mixers.h).
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
#include "engine/cuda/kernels_kv_copy.h"
#include "engine/cuda/kv_lineage.h"
#include "engine/cuda/token_mixer.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/model.h"

namespace hgeval::cuda {

// The head's block: rows whose fp32 logits are computed at once. 768 where their logits fit
// kLogitBlockBytes, else 512. The pinned head GEMM's tiles are 320 columns by 128 rows,
// in clusters of two along the rows: for each 32,000 columns, 768 rows make 600 tiles, 4.5
// waves of 132 SMs in 5, where 512 rows made 400, a fourth wave of 4 tiles (performance
// log entry 35).
constexpr int64_t kLogitBlockBytes = int64_t{192} << 20;
constexpr int LogitBlockRows(int64_t vocab) {
  return 768 * vocab * static_cast<int64_t>(sizeof(float)) <= kLogitBlockBytes ? 768 : 512;
}

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

// One segment of an item in a pack: tokens [offset, offset + length) of items[item].
struct PackSegment {
  size_t item = 0;
  int64_t offset = 0;
  int64_t length = 0;
  // Its chunks use the chunk states (all but a read-only fork that fits in one chunk).
  bool uses_chunk_states = true;
};

// A layer-major pass (CudaModel::RunLayerMajor): layer `first_layer` over one segment of
// an item that keeps no state, with the residual stream of all its tokens and one
// layer's keys and values in buffers of the pass.
struct LayerSpan {
  int first_layer = 0;
  float* hidden = nullptr;   // [T, D]
  float* delta = nullptr;    // [T, D]
  void* kv_layer = nullptr;  // [2][kv_cap][Hkv][hd]
  int64_t kv_cap = 0;
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
  KvLineage kv_lineage_;  // LLaMA: whose positions kv_ holds (decode steps share reads)
};

// Device weights of one block around its token mixer.
struct BlockWeights {
  DeviceBuffer norm1, norm2;           // fp32 [D] (Mamba: norm1 only)
  DeviceBuffer mlp_gate_up, mlp_down;  // act [2I, D], [D, I] (not Mamba)
};

class CudaModel : public Model {
 public:
  // Around config.family's token mixer (cuda_mixers.h); UNIMPLEMENTED for
  // configurations the family's kernels do not cover.
  static absl::StatusOr<std::unique_ptr<CudaModel>> Build(const Checkpoint& checkpoint,
                                                          const ModelConfig& config, int device,
                                                          Act act, int64_t max_context = 0);
  ~CudaModel() override;

  const ModelInfo& info() const override { return info_; }
  const ModelConfig& config() const override { return config_; }
  std::unique_ptr<SequenceState> NewState() const override;
  absl::Status Forward(absl::Span<const ForwardItem> given,
                       absl::Span<ForwardOutput> outputs) override;
  std::unique_ptr<SequenceState> NewStateFor(const SequenceState* start,
                                             int64_t tokens) const override;
  size_t StateBytes(int64_t tokens) const override;
  size_t ReadOnlyForkBytes(int64_t start_tokens, int64_t tokens) const override;
  MemoryBudget* memory_budget() const override { return ctx_->pool()->budget(); }

  // Device memory held by this model (weights, scratch, states), and its peak.
  size_t device_bytes_in_use() const { return ctx_->pool()->bytes_in_use(); }
  size_t peak_device_bytes() const { return ctx_->pool()->peak_bytes_in_use(); }
  void ResetPeakDeviceBytes() { ctx_->pool()->ResetPeak(); }
  DeviceContext* context() const { return ctx_.get(); }
  std::string device_name() const { return ctx_->name(); }

 private:
  friend class CudaSequenceState;
  CudaModel() = default;

  absl::Status LoadWeights(const Checkpoint& checkpoint, DeviceAllocator& alloc);
  absl::Status AllocateScratch(DeviceAllocator& alloc);

  // Bytes of the pack tables (host and device each).
  size_t PackTableBytes() const;
  absl::Status EnsureKvCapacity(CudaSequenceState* st, int64_t needed, bool decoding) const;
  // A private copy of `start` for an item that feeds `tokens` more: its KV cache holds
  // exactly what the item needs (the start's capacity is not copied).
  // Whether Forward runs an item of `tokens` tokens continuing read-only from a start on a
  // copy of it (ReadOnlyForkBytes counts that copy).
  bool ReadOnlyForkCopiesStart(int64_t tokens) const;
  // With `deferred`, the KV-cache copy is appended there for one batched launch
  // (EnqueueKvPrefixCopies) instead of being enqueued now.
  absl::StatusOr<std::unique_ptr<CudaSequenceState>> ForkForItem(
      const CudaSequenceState& start, int64_t tokens,
      std::vector<KvPrefixCopy>* deferred = nullptr) const;
  // Enqueues `copies` as one kernel; their table lives in `table` until the work is done.
  absl::Status EnqueueKvPrefixCopies(const std::vector<KvPrefixCopy>& copies,
                                     DeviceBuffer* table) const;

  // Splits the multi-token items into segments and runs them as packs.
  absl::Status RunPacked(absl::Span<const ForwardItem> items, absl::Span<ForwardOutput> outputs,
                         absl::Span<const size_t> packed_items);
  // `span`: one layer of a layer-major pass (one segment), else every layer.
  absl::Status RunPack(absl::Span<const ForwardItem> items, absl::Span<ForwardOutput> outputs,
                       absl::Span<const PackSegment> segments, const LayerSpan* span = nullptr);
  // Fresh-start items of a KV-cache family longer than one pack run layer-major.
  bool RunsLayerMajor(const ForwardItem& item) const;
  absl::Status RunLayerMajor(absl::Span<const ForwardItem> items, absl::Span<ForwardOutput> outputs,
                             size_t index);
  absl::Status RunDecodeGroup(absl::Span<const ForwardItem* const> items,
                              absl::Span<ForwardOutput* const> outs);
  // Enqueues the whole decode step over `rows` rows (inputs already on the device).
  absl::Status EnqueueDecodeStep(int rows);
  // Rows a decode step of n items runs: kDecodeRows, or n rounded up to 8 where every
  // decode linear is the batch-invariant DecodeGemmNT (bf16, HGEVAL_CUDA_DECODE_GEMM=1).
  int DecodeStepRows(int n) const;
  // Runs the layers over `rows` rows of `num_seqs` sequences in scratch (h -> final normed
  // x). Decode: one row per sequence; otherwise the pack in pack_.
  // Layers [first_layer, end_layer) (end -1: all); the embedding runs with layer 0, the
  // final norm with the last.
  // Packs where TailOnLogitRows: `logits` lists the rows that report logits (ascending
  // device indices, with their count); the last layer's MLP and the final norm run over
  // them alone, and the final normed x holds them in rows [0, count).
  struct LogitRowList {
    const int32_t* rows = nullptr;
    int count = -1;  // -1: the last layer over every row
  };
  absl::Status EnqueueLayers(int rows, int num_seqs, bool decode, int first_layer = 0,
                             int end_layer = -1, LogitRowList logits = {nullptr, -1});
  // Whether a pack of `rows` rows, `logit_count` of which report logits, that runs layers
  // up to `end_layer` runs its last layer over the logit rows alone.
  bool TailOnLogitRows(int rows, int logit_count, int end_layer) const;
  absl::Status EnqueueTailOnLogitRows(MixerPass pass, const BlockWeights& w, LogitRowList logits,
                                      bool gathered);
  // The MLP of pass.rows rows of x: its output added into `residual` (fp32 rows) in down's
  // epilogue, or without one (decode steps that do not DecodeAddsToResidual) into delta.
  absl::Status EnqueueMlp(const MixerPass& pass, float* residual);
  // Whether decode steps add o_proj's (where the family's adds to the residual) and down's
  // products into h in the decode GEMM's epilogue, as packs do in the pinned GEMM's: bf16
  // on the decode GEMM (decode_gemm.h; the same floats as a delta and AddRmsNorm's add).
  bool DecodeAddsToResidual() const;

  ModelInfo info_;
  ModelConfig config_;
  Act act_ = Act::kF32;
  std::shared_ptr<DeviceContext> ctx_;

  // The family's token mixer and how its block differs from fla's.
  std::unique_ptr<CudaTokenMixer> mixer_;
  BlockLayout layout_;
  int64_t state_floats_per_layer_ = 0;  // recurrent state, fp32, per layer and sequence

  // Shapes.
  int64_t D_ = 0, V_ = 0, L_ = 0, I_ = 0;

  // Weights.
  DeviceBuffer embed_, lm_head_, final_norm_;
  std::vector<BlockWeights> blocks_;

  // Scratch (fixed at build so graphs stay valid).
  DeviceBuffer h_, x_, delta_, gu_, mlp_;
  // Rows of one MLP block (gu_ holds them; MlpBlockRows).
  int mlp_rows_ = 0;
  int logit_rows_ = 0;  // LogitBlockRows(V_): logits_ holds this many rows
  // Whether SwiGLU writes over gu_'s g half (bf16 mode: mlp_ is not allocated) rather than
  // into mlp_ (fp32 keeps its down projection's operand layout, so its bits).
  bool MlpInPlace() const { return act_ == Act::kBF16; }
  DeviceBuffer logits_, logit_x_;
  DeviceBuffer identity_rows_;  // int32 0, 1, ..., kDecodeRows: the decode step's tables

  DeviceBuffer decode_io_;
  void* host_io_ = nullptr;
  RowInputs cur_;

  // Pack tables: one pinned host block and its device mirror (same layout), uploaded with
  // one copy per pack; pack_ views the device side.
  DeviceBuffer pack_dev_;
  void* pack_host_ = nullptr;
  size_t pack_bytes_ = 0;
  int64_t max_pack_chunks_ = 0;
  PackView pack_;
  // Host copies of the current pack's per-sequence data (PackHostView).
  std::vector<int32_t> pack_seq_row0_;
  std::vector<int64_t> pack_seq_pos0_;
  std::vector<void*> pack_kv_;
  std::vector<int64_t> pack_kv_cap_;

  std::unique_ptr<PinnedGemm> pinned_gemm_;

  // Decode graphs, one per step row count (8, 16, 24, 32), each captured after an eager
  // step of that count.
  static constexpr int kDecodeShapes = kDecodeRows / 8;
  cudaGraphExec_t decode_graphs_[kDecodeShapes] = {};
  int64_t decode_eager_steps_[kDecodeShapes] = {};
  bool graphs_enabled_ = true;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_CUDA_MODEL_H_
