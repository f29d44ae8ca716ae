// The CUDA backend's per-family interface: a family's token mixer over all layers (the
// "attn" sublayer of a block; Mamba's mixer, LLaMA's self-attention), with its weights,
// state layout, scratch and kernels for packs and for the one-token decode step, plus how
// the family's block around it differs from fla's. CudaModel (cuda_model.h) runs the
// shared skeleton around it: embedding, norms, MLP, head, packing and decode graphs.
// One implementation per family, in the file of the CPU backend's name (hgrn2.cc, ...).
#ifndef HGEVAL_ENGINE_CUDA_TOKEN_MIXER_H_
#define HGEVAL_ENGINE_CUDA_TOKEN_MIXER_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/cuda/device_allocator.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/kv_lineage.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/tensor_names.h"

namespace hgeval::cuda {

// Rows (tokens) of one packed forward; also the segment length of longer items.
constexpr int kPackRows = 16384;
constexpr int kDecodeRows = 32;
// The MLP's block: the most rows (4,096 doubled up to kPackRows) whose gate|up product,
// `row_bytes` a row, fits kMlpBlockBytes, so a 1.3B model's bf16 MLP runs a whole pack in
// one GEMM (fewer, fuller waves) and a larger model's scratch stays bounded in bytes.
constexpr int64_t kMlpBlockBytes = int64_t{384} << 20;
constexpr int MlpBlockRows(int64_t row_bytes) {
  int rows = 4096;
  while (rows < kPackRows && 2 * rows * row_bytes <= kMlpBlockBytes) rows *= 2;
  return rows;
}

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

// A live row of a decode step: its position (the key it writes) and its cache's lineage.
struct DecodeStepRow {
  int64_t position = 0;
  const KvLineage* lineage = nullptr;
};

// Host copies of a pack's per-sequence data (LLaMA's fp32 attention runs one sequence at
// a time from the host).
struct PackHostView {
  absl::Span<const int32_t> seq_row0;  // [num_seqs + 1]
  absl::Span<const int64_t> seq_pos0;  // position of each sequence's first row
  absl::Span<void* const> kv;          // each sequence's KV cache
  absl::Span<const int64_t> kv_cap;    // and its capacity
};

// One layer of a token mixer over the rows of a pack or of the decode step.
struct MixerPass {
  int layer = 0;
  int rows = 0;  // decode: kDecodeRows (padding rows have null state pointers)
  int num_seqs = 0;
  bool decode = false;
  const RowInputs* in = nullptr;
  const PackView* pack = nullptr;      // packs only
  const PackHostView* host = nullptr;  // packs only
  const void* x = nullptr;             // act [rows, D]: the block's first norm
  float* delta = nullptr;              // fp32 [rows, D]: the mixer's output
  // Packs of a family with BlockLayout::o_proj_adds_to_residual, and its decode steps on
  // the decode GEMM: the residual stream h (fp32 [rows, D]), which ProjectOut adds the
  // output into instead of writing delta.
  float* residual = nullptr;
  // A pack's last layer where only some rows report logits (CudaModel::TailOnLogitRows) and
  // the mixer ProjectsOutputRows: the mixer still advances every sequence's state, but
  // projects its output only at out_rows (out_count ascending pack rows; 0: none), adding
  // it into out_residual's first rows after gathering residual's rows there.
  const int32_t* out_rows = nullptr;
  int out_count = -1;  // -1: every row, into residual
  float* out_residual = nullptr;
  // Whether any row reports the mixer's output (none: the states alone).
  bool ReportsOutput() const { return out_count != 0; }
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  PinnedGemm* pinned = nullptr;

  // C = A W^T, or with `accumulate` (fp32 C) C += A W^T: the decode step's through the
  // decode GEMM or cublasGemmEx at its fixed shape, packs' through the pinned algorithms
  // (batch invariance, gemm.h).
  absl::Status Linear(int64_t m, int64_t n, int64_t k, MatRef a, MatRef w, void* c, Act c_act,
                      int64_t ldc, bool accumulate = false) const;
  // The mixer's output projection of pass rows [r0, r0 + m): delta = a · wᵀ (fp32, n = D
  // wide), or where `residual` is set, residual += a · wᵀ in the GEMM's epilogue (gemm.h,
  // decode_gemm.h: bitwise the product into delta and the next norm's add).
  absl::Status ProjectOutput(int64_t r0, int64_t m, int64_t n, int64_t k, MatRef a, MatRef w) const;
};

// How a family's block differs from fla's (norm -> mixer -> add+norm -> SwiGLU MLP -> add).
struct BlockLayout {
  bool mlp = true;                 // Mamba: norm -> mixer only
  bool mlp_silu = true;            // TNL: a GLU without activation
  bool norm_weights = true;        // TNL: SimpleRMSNorm (weights of ones, not counted)
  float embedding_scale = 1.0f;    // TNL: sqrt(D) unless no_scale_embedding
  std::optional<double> norm_eps;  // replaces config.norm_eps (TNL: SimpleRMSNorm's 1e-6)
  // LLaMA: the KV cache holds this many bytes per position and layer plane ([L][2][cap]);
  // 0: the family keeps a fixed-size recurrent state instead.
  int64_t kv_row_bytes = 0;
  bool bounded_context = false;  // LLaMA: positions bounded by max_position_embeddings
  // Packs: the mixer's output projection (MixerPass::ProjectOutput: ProjectionScratch's
  // ProjectOut, LLaMA's o_proj) adds it to the residual in its epilogue
  // (MixerPass::residual; gemm.h's beta = 1).
  bool o_proj_adds_to_residual = false;
};

// The scratch of mixers that project x once (one fused fp32 input projection), compute an
// output o (fp32) and normalise it (activation dtype) before o_proj: HGRN2, HGRN, GLA, TNL.
struct ProjectionScratch {
  int64_t d = 0;                // model width D
  int64_t proj_width = 0;       // columns of proj
  int64_t out_width = 0;        // columns of o / onorm (o_proj's input)
  DeviceBuffer proj, o, onorm;  // o: kPackRows rows, unless the family keeps o elsewhere

  // proj and onorm hold kPackRows rows, proj as pack_proj_act (what ProjectIn's proj_act is
  // for packs; fp32 for the decode step's kDecodeRows).
  absl::Status Allocate(DeviceAllocator& alloc, int64_t d, int64_t proj_width, int64_t out_width,
                        bool with_o = true, Act pack_proj_act = Act::kF32);
  // proj = x · w_inᵀ for the pass's rows (fp32, or proj_act: HGRN2's and TNL's packs in
  // bf16 mode).
  absl::Status ProjectIn(const MixerPass& pass, const DeviceBuffer& w_in, Act act,
                         Act proj_act = Act::kF32) const;
  // delta = onorm · w_outᵀ (fp32) for the pass's rows; where pass.residual is set (packs),
  // residual += onorm · w_outᵀ instead.
  absl::Status ProjectOut(const MixerPass& pass, const DeviceBuffer& w_out, Act act) const;
  // The mixer's norm of o into onorm, then ProjectOut. `norm(rows, o_rows)` enqueues the
  // norm of `rows` rows, row r from o's row o_rows[r] (null: r). Where the pass lists
  // out_rows (MixerPass) only those: normed from o's rows as listed, residual's rows
  // gathered into out_residual once o has been read (o may live there), projected into
  // them. Per row the same kernels and pinned GEMM site, so the same bits.
  absl::Status NormAndProjectOut(const MixerPass& pass,
                                 absl::FunctionRef<cudaError_t(int, const int32_t*)> norm,
                                 const DeviceBuffer& w_out, Act act) const;
};

class CudaTokenMixer {
 public:
  virtual ~CudaTokenMixer() = default;
  virtual BlockLayout layout() const { return {}; }
  // Reads every layer's mixer weights (under names.MixerPrefix(l); shapes checked) and
  // uploads them through `alloc` (which counts them).
  virtual absl::Status Load(const Checkpoint& checkpoint, const BlockTensorNames& names,
                            DeviceAllocator& alloc) = 0;
  // fp32 values of one layer's recurrent state per sequence (0: none).
  virtual int64_t StateFloatsPerLayer() const = 0;
  // The mixer's scratch for kPackRows rows (fixed at build: graphs keep the pointers).
  virtual absl::Status AllocateScratch(DeviceAllocator& alloc) = 0;
  // Chunks of kGlaChunk rows a pack may hold that use chunk states (the chunkwise
  // recurrences' state budget; a mixer without chunk states has no bound but the rows).
  virtual int64_t MaxPackChunks() const { return kPackRows; }
  // Room for the chunk states of packs of up to `chunks` chunks, taken before a Forward
  // runs anything; returns the chunks a pack may hold now (≥ one segment's, fewer than
  // asked when the memory budget refuses more).
  virtual absl::StatusOr<int64_t> ReservePackChunks(int64_t chunks) { return MaxPackChunks(); }
  // Enqueues one layer: reads pass.x, writes pass.delta (o_proj applied), advances the
  // sequences' states (pass.in's state and out pointers).
  virtual absl::Status Enqueue(const MixerPass& pass) = 0;
  // Whether Enqueue honours pass.out_rows (MixerPass; NormAndProjectOut does).
  virtual bool ProjectsOutputRows() const { return false; }
  // Before each decode step's layers are enqueued or its graph replayed: the step's live
  // rows in row order (LLaMA uploads its attention plan here, decode_attention_plan.h).
  virtual absl::Status PrepareDecodeStep(absl::Span<const DecodeStepRow> rows,
                                         cudaStream_t stream) {
    return absl::OkStatus();
  }

  // The longest context a sequence may reach (ModelInfo::max_context; 0: unbounded), set
  // before AllocateScratch.
  void set_max_context(int64_t tokens) { max_context_ = tokens; }

 protected:
  int64_t max_context_ = 0;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_TOKEN_MIXER_H_
