// CudaModel forward passes: batching into the sequence and decode paths, the shared
// block skeleton around the family's token mixer, and the fused log-softmax head.
#include "engine/cuda/cuda_model.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/decode_gemm.h"
#include "engine/cuda/env_switch.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/host_counters.h"
#include "engine/cuda/kernels_swiglu_gemm.h"
#include "engine/model/forward_validation.h"
#include "engine/model/top_k.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {
namespace {

#define HG_LAUNCH(expr) HG_CUDA_RETURN(expr)

MatRef Mat(const void* ptr, Act act, int64_t ld) { return MatRef{ptr, act, ld}; }

}  // namespace

// ---- states ------------------------------------------------------------------------

CudaSequenceState::~CudaSequenceState() = default;

// Copies are enqueued on the model's one stream, ordered before any later use of either
// state, so the host does not wait for them (a fork per scored choice stays cheap).
std::unique_ptr<SequenceState> CudaSequenceState::Clone() const {
  DeviceGuard guard(ctx_->device());
  absl::StatusOr<std::unique_ptr<CudaSequenceState>> copy = owner_->ForkForItem(*this, 0);
  if (!copy.ok()) {
    std::fprintf(stderr, "hgeval cuda: state clone failed: %s\n",
                 std::string(copy.status().message()).c_str());
    return nullptr;
  }
  return *std::move(copy);
}

std::unique_ptr<SequenceState> CudaModel::NewState() const {
  DeviceGuard guard(ctx_->device());
  auto st = std::make_unique<CudaSequenceState>(this, ctx_);
  if (layout_.kv_row_bytes > 0) st->kv_lineage_ = KvLineage::Fresh();
  const int64_t floats = state_floats_per_layer_ * L_;
  if (floats > 0) {
    auto buf = DeviceBuffer::Make(ctx_->pool(), floats * sizeof(float));
    if (!buf.ok() ||
        cudaMemsetAsync(buf->get(), 0, floats * sizeof(float), ctx_->stream()) != cudaSuccess) {
      std::fprintf(stderr, "hgeval cuda: state allocation failed (out of device memory?)\n");
      return nullptr;
    }
    st->recurrent_ = std::move(*buf);
  }
  return st;
}

namespace {

// HGEVAL_CUDA_FORK_COPY=memcpy: Forward copies each read-only fork's KV cache with a
// cudaMemcpy2DAsync of its own (before the batched copy; for measurement).
bool KvCopiesBatched() { return !EnvIs("HGEVAL_CUDA_FORK_COPY", "memcpy"); }

// HGEVAL_CUDA_FUSED_MLP=1: bf16 packs run the MLP's gate|up GEMM and SwiGLU as one kernel
// where the device has it (kernels_swiglu_gemm.h; the same bits, about the same time on
// the H200: docs/cuda.md, performance log entries 48, 49). Off by default; read once.
bool FusedMlpEnabled() {
  static const bool enabled = EnvIs("HGEVAL_CUDA_FUSED_MLP", "1");
  return enabled;
}

// KV caches grow in steps of this many positions (the attention kernels read only the
// positions filled, so the capacity is a stride, never a bound they rely on).
constexpr int64_t kKvStep = 64;

// The bf16 head's widest column slice (one pinned GEMM site per slice width).
constexpr int64_t kHeadSliceCols = 32768;

int64_t KvCapacityFor(int64_t positions) {
  return (std::max<int64_t>(positions, 1) + kKvStep - 1) / kKvStep * kKvStep;
}

}  // namespace

size_t CudaModel::StateBytes(int64_t tokens) const {
  size_t bytes = 0;
  if (state_floats_per_layer_ > 0) {
    bytes += DevicePool::RoundSize(state_floats_per_layer_ * L_ * sizeof(float));
  }
  if (layout_.kv_row_bytes > 0 && tokens > 0) {
    bytes += DevicePool::RoundSize(L_ * 2 * KvCapacityFor(tokens) * layout_.kv_row_bytes);
  }
  return bytes;
}

bool CudaModel::ReadOnlyForkCopiesStart(int64_t tokens) const {
  // A KV-cache item needs its own cache to write its keys into, and an item longer than a
  // pack a state to carry between its segments (the start must not become it); a
  // recurrent item that fits a pack reads its start in place.
  return layout_.kv_row_bytes > 0 || tokens > kPackRows;
}

size_t CudaModel::ReadOnlyForkBytes(int64_t start_tokens, int64_t tokens) const {
  return ReadOnlyForkCopiesStart(tokens) ? StateBytes(start_tokens + tokens) : 0;
}

absl::Status CudaModel::EnsureKvCapacity(CudaSequenceState* st, int64_t needed,
                                         bool decoding) const {
  if (needed <= st->kv_cap_) return absl::OkStatus();
  const int64_t row_bytes = layout_.kv_row_bytes;
  // Decoding grows by an eighth (at least 2 steps of positions), so that it copies the
  // cache every few hundred tokens rather than every step while keeping what a long
  // context reserves close to what it holds (under a tight budget the exact size is tried
  // before giving up); a prefill takes exactly what it feeds.
  int64_t cap = KvCapacityFor(
      decoding ? std::max<int64_t>(needed, st->kv_cap_ + std::max(2 * kKvStep, st->kv_cap_ / 8))
               : needed);
  absl::StatusOr<DeviceBuffer> fresh = DeviceBuffer::Make(ctx_->pool(), L_ * 2 * cap * row_bytes);
  if (!fresh.ok() && absl::IsResourceExhausted(fresh.status()) && cap > KvCapacityFor(needed)) {
    cap = KvCapacityFor(needed);
    fresh = DeviceBuffer::Make(ctx_->pool(), L_ * 2 * cap * row_bytes);
  }
  if (!fresh.ok()) return fresh.status();
  if (st->kv_cap_ > 0 && st->position_ > 0) {
    HG_CUDA_RETURN(cudaMemcpy2DAsync(fresh->get(), cap * row_bytes, st->kv_.get(),
                                     st->kv_cap_ * row_bytes, st->position_ * row_bytes, 2 * L_,
                                     cudaMemcpyDeviceToDevice, ctx_->stream()));
  }
  st->kv_ = *std::move(fresh);
  st->kv_cap_ = cap;
  return absl::OkStatus();
}

std::unique_ptr<SequenceState> CudaModel::NewStateFor(const SequenceState* start,
                                                      int64_t tokens) const {
  DeviceGuard guard(ctx_->device());
  absl::StatusOr<std::unique_ptr<CudaSequenceState>> state;
  if (start == nullptr) {
    std::unique_ptr<SequenceState> empty = NewState();
    if (empty == nullptr) return nullptr;
    auto* st = static_cast<CudaSequenceState*>(empty.get());
    if (layout_.kv_row_bytes > 0 && tokens > 0) {
      if (absl::Status s = EnsureKvCapacity(st, tokens, /*decoding=*/false); !s.ok()) {
        std::fprintf(stderr, "hgeval cuda: state allocation failed: %s\n",
                     std::string(s.message()).c_str());
        return nullptr;
      }
    }
    return empty;
  }
  const auto* src = dynamic_cast<const CudaSequenceState*>(start);
  if (src == nullptr || src->owner() != this) return start->Clone();
  state = ForkForItem(*src, tokens);
  if (!state.ok()) {
    std::fprintf(stderr, "hgeval cuda: state copy failed: %s\n",
                 std::string(state.status().message()).c_str());
    return nullptr;
  }
  return *std::move(state);
}

absl::StatusOr<std::unique_ptr<CudaSequenceState>> CudaModel::ForkForItem(
    const CudaSequenceState& start, int64_t tokens, std::vector<KvPrefixCopy>* deferred) const {
  auto copy = std::make_unique<CudaSequenceState>(this, ctx_);
  copy->position_ = start.position_;
  if (layout_.kv_row_bytes > 0) copy->kv_lineage_ = start.kv_lineage_.ForkAt(start.position_);
  if (start.recurrent_.size() > 0) {
    HG_ASSIGN_OR_RETURN(copy->recurrent_,
                        DeviceBuffer::Make(ctx_->pool(), start.recurrent_.size()));
    HG_CUDA_RETURN(cudaMemcpyAsync(copy->recurrent_.get(), start.recurrent_.get(),
                                   start.recurrent_.size(), cudaMemcpyDeviceToDevice,
                                   ctx_->stream()));
  }
  if (layout_.kv_row_bytes > 0 && start.position_ + tokens > 0) {
    const int64_t row_bytes = layout_.kv_row_bytes;
    const int64_t cap = KvCapacityFor(start.position_ + tokens);
    HG_ASSIGN_OR_RETURN(copy->kv_, DeviceBuffer::Make(ctx_->pool(), L_ * 2 * cap * row_bytes));
    copy->kv_cap_ = cap;
    if (start.position_ > 0 && deferred != nullptr) {
      KvPrefixCopy c;
      c.src = start.kv_.get();
      c.dst = copy->kv_.get();
      c.src_plane_bytes = start.kv_cap_ * row_bytes;
      c.dst_plane_bytes = cap * row_bytes;
      c.bytes = start.position_ * row_bytes;
      deferred->push_back(c);
    } else if (start.position_ > 0) {
      HG_CUDA_RETURN(cudaMemcpy2DAsync(copy->kv_.get(), cap * row_bytes, start.kv_.get(),
                                       start.kv_cap_ * row_bytes, start.position_ * row_bytes,
                                       2 * L_, cudaMemcpyDeviceToDevice, ctx_->stream()));
    }
  }
  return copy;
}

absl::Status CudaModel::EnqueueKvPrefixCopies(const std::vector<KvPrefixCopy>& copies,
                                              DeviceBuffer* table) const {
  if (copies.empty()) return absl::OkStatus();
  const size_t bytes = copies.size() * sizeof(KvPrefixCopy);
  HG_ASSIGN_OR_RETURN(*table, DeviceBuffer::Make(ctx_->pool(), bytes));
  HG_CUDA_RETURN(
      cudaMemcpyAsync(table->get(), copies.data(), bytes, cudaMemcpyHostToDevice, ctx_->stream()));
  // Pool blocks are 256-byte aligned and every plane and length a multiple of a KV row.
  const int64_t row_bytes = layout_.kv_row_bytes;
  const int unit = row_bytes % 16 == 0 ? 16 : row_bytes % 4 == 0 ? 4 : 1;
  constexpr size_t kMaxLaunch = 65535;  // the grid's z extent
  for (size_t first = 0; first < copies.size(); first += kMaxLaunch) {
    const size_t count = std::min(kMaxLaunch, copies.size() - first);
    int64_t longest = 0;
    for (size_t i = first; i < first + count; ++i) longest = std::max(longest, copies[i].bytes);
    HG_CUDA_RETURN(CopyKvPrefixes(table->as<KvPrefixCopy>() + first, static_cast<int>(count),
                                  static_cast<int>(2 * L_), longest, unit, ctx_->stream()));
  }
  return absl::OkStatus();
}

// ---- layers ------------------------------------------------------------------------

absl::Status CudaModel::EnqueueMlp(const MixerPass& pass, float* residual) {
  const BlockWeights& w = blocks_[pass.layer];
  const size_t act_size = ActSize(act_);
  // mlp_rows_ rows at a time: gu_ (and mlp_) hold one block.
  for (int r0 = 0; r0 < pass.rows; r0 += mlp_rows_) {
    const int rows = std::min(mlp_rows_, pass.rows - r0);
    const char* x = static_cast<const char*>(x_.get()) + r0 * D_ * act_size;
    // TNL's GLU has no activation: l3(l1(x) * l2(x)).
    void* act_out = MlpInPlace() ? gu_.get() : mlp_.get();
    const int64_t act_ld = MlpInPlace() ? 2 * I_ : I_;
    const int inter = static_cast<int>(I_), dim = static_cast<int>(D_);
    if (!pass.decode && act_ == Act::kBF16 && FusedMlpEnabled() && SwiGluGemmAvailable() &&
        SwiGluGemmFits(dim, D_, D_, inter, act_ld, x, w.mlp_gate_up.get(), act_out)) {
      HG_LAUNCH(LaunchSwiGluGemm(pass.stream, rows, inter, dim, x, D_, w.mlp_gate_up.get(), D_,
                                 layout_.mlp_silu, act_out, act_ld));
    } else {
      HG_RETURN_IF_ERROR(pass.Linear(rows, 2 * I_, D_, Mat(x, act_, D_),
                                     Mat(w.mlp_gate_up.get(), act_, D_), gu_.get(), act_, 2 * I_));
      HG_LAUNCH(
          SwiGlu(gu_.get(), rows, inter, act_out, act_, pass.stream, layout_.mlp_silu, act_ld));
    }
    const MatRef down_in = Mat(act_out, act_, act_ld), down_w = Mat(w.mlp_down.get(), act_, I_);
    if (residual == nullptr) {
      HG_RETURN_IF_ERROR(
          pass.Linear(rows, D_, I_, down_in, down_w, delta_.as<float>() + r0 * D_, Act::kF32, D_));
    } else {
      // The residual add in the epilogue (into the fp32 h; gemm.h, decode_gemm.h: bitwise
      // the product into delta and AddRmsNorm's h + delta), so delta is not written and read.
      HG_RETURN_IF_ERROR(pass.Linear(rows, D_, I_, down_in, down_w, residual + r0 * D_, Act::kF32,
                                     D_, /*accumulate=*/true));
    }
  }
  return absl::OkStatus();
}

bool CudaModel::TailOnLogitRows(int rows, int logit_count, int end_layer) const {
  // Only where the mixer adds into h (nothing pending in delta, which then holds the
  // gathered rows) and an MLP follows it; and where at least a 16th of the rows report no
  // logits, since gathering a row (16 bytes a channel moved) costs about a 20th of its MLP.
  return end_layer == L_ && layout_.mlp && layout_.o_proj_adds_to_residual &&
         16 * static_cast<int64_t>(rows - logit_count) >= rows;
}

// The last layer's MLP and the final norm feed only the logits, so they run over the rows
// that report them: h's rows gathered into delta (free once the mixer has added into h;
// a mixer that ProjectsOutputRows has gathered them itself), then the same kernels and
// pinned GEMM sites as over the whole pack. Every kernel is per row and a pinned GEMM's
// row never depends on M (gemm.h), so those rows keep their bits.
absl::Status CudaModel::EnqueueTailOnLogitRows(MixerPass pass, const BlockWeights& w,
                                               LogitRowList logits, bool gathered) {
  if (logits.count == 0) return absl::OkStatus();
  cudaStream_t s = pass.stream;
  const float eps = static_cast<float>(config_.norm_eps);
  const int d = static_cast<int>(D_);
  float* tail = delta_.as<float>();
  if (!gathered) HG_LAUNCH(GatherRows(h_.get(), logits.rows, logits.count, d, tail, Act::kF32, s));
  HG_LAUNCH(
      AddRmsNorm(tail, nullptr, w.norm2.as<float>(), eps, logits.count, d, x_.get(), act_, s));
  pass.rows = logits.count;
  HG_RETURN_IF_ERROR(EnqueueMlp(pass, tail));
  HG_LAUNCH(
      AddRmsNorm(tail, nullptr, final_norm_.as<float>(), eps, logits.count, d, x_.get(), act_, s));
  return absl::OkStatus();
}

absl::Status CudaModel::EnqueueLayers(int rows, int num_seqs, bool decode, int first_layer,
                                      int end_layer, LogitRowList logits) {
  if (end_layer < 0) end_layer = static_cast<int>(L_);
  cudaStream_t s = ctx_->stream();
  const float eps = static_cast<float>(config_.norm_eps);
  const int d = static_cast<int>(D_);
  const PackHostView host{pack_seq_row0_, pack_seq_pos0_, pack_kv_, pack_kv_cap_};
  MixerPass pass;
  pass.rows = rows;
  pass.num_seqs = num_seqs;
  pass.decode = decode;
  pass.in = &cur_;
  pass.pack = &pack_;
  pass.host = &host;
  pass.x = x_.get();
  pass.delta = delta_.as<float>();
  pass.stream = s;
  pass.cublas = ctx_->cublas();
  pass.pinned = pinned_gemm_.get();
  if (first_layer == 0) {
    HG_LAUNCH(EmbedRows(embed_.get(), act_, cur_.ids, rows, d, h_.as<float>(), s));
  }
  // Packs with an MLP add its output to h in the down projection (EnqueueMlp), and packs
  // of a family whose o_proj does (BlockLayout::o_proj_adds_to_residual) the mixer's: what
  // wrote last then leaves nothing in delta for the next norm (a resumed segment's neither).
  // Decode steps do the same where DecodeAddsToResidual (the decode GEMM's epilogue).
  const bool adds_to_h = !decode || DecodeAddsToResidual();
  const bool mlp_adds_to_h = adds_to_h && layout_.mlp;
  const bool mixer_adds_to_h = adds_to_h && layout_.o_proj_adds_to_residual;
  const bool layer_adds_to_h = layout_.mlp ? mlp_adds_to_h : mixer_adds_to_h;
  pass.residual = mixer_adds_to_h ? h_.as<float>() : nullptr;
  for (int l = first_layer; l < end_layer; ++l) {
    const BlockWeights& w = blocks_[l];
    pass.layer = l;
    const float* pending = l == 0 || layer_adds_to_h ? nullptr : delta_.as<float>();
    HG_LAUNCH(
        AddRmsNorm(h_.as<float>(), pending, w.norm1.as<float>(), eps, rows, d, x_.get(), act_, s));
    if (l == L_ - 1 && logits.count >= 0) {
      // The mixer's own output projection over the logit rows too, where it can.
      MixerPass last = pass;
      const bool mixer_rows = mixer_->ProjectsOutputRows();
      if (mixer_rows) {
        last.out_rows = logits.rows;
        last.out_count = logits.count;
        last.out_residual = delta_.as<float>();
      }
      HG_RETURN_IF_ERROR(mixer_->Enqueue(last));
      return EnqueueTailOnLogitRows(pass, w, logits, /*gathered=*/mixer_rows);
    }
    HG_RETURN_IF_ERROR(mixer_->Enqueue(pass));
    if (layout_.mlp) {
      HG_LAUNCH(AddRmsNorm(h_.as<float>(), mixer_adds_to_h ? nullptr : delta_.as<float>(),
                           w.norm2.as<float>(), eps, rows, d, x_.get(), act_, s));
      HG_RETURN_IF_ERROR(EnqueueMlp(pass, mlp_adds_to_h ? h_.as<float>() : nullptr));
    }
  }
  if (end_layer == L_) {
    HG_LAUNCH(AddRmsNorm(h_.as<float>(), layer_adds_to_h ? nullptr : delta_.as<float>(),
                         final_norm_.as<float>(), eps, rows, d, x_.get(), act_, s));
  }
  return absl::OkStatus();
}

// ---- pack tables ----------------------------------------------------------------------

namespace {

// The pack tables inside one block of memory (the pinned host block and its device mirror
// share this layout). Inputs first (uploaded together), then the per-row outputs.
struct PackTables {
  int64_t* positions;   // [R] position of each row in its sequence
  int64_t* caps;        // [S] KV-cache capacity (LLaMA)
  float** state_ptrs;   // [S] recurrent state read (all layers)
  float** out_ptrs;     // [S] where it is written back (null: not kept)
  void** kv_ptrs;       // [S] KV cache
  int32_t* ids;         // [R]
  int32_t* row_seq;     // [R]
  int32_t* seq_row0;    // [S + 1]
  int32_t* seq_chunk0;  // [S + 1]
  int32_t* chunk_row0;  // [C]
  int32_t* chunk_seq;   // [C]
  int32_t* tile_seq;    // [Tt]
  int32_t* tile_q0;     // [Tt]
  int32_t* logit_rows;  // [R] rows whose logits are computed
  int32_t* targets;     // [R] their targets (-1: none)
  float* lp;            // [R] outputs: log p(target)
  int32_t* am;          // [R] outputs: argmax
  size_t input_bytes = 0;
  size_t total_bytes = 0;
};

int64_t MaxPackTiles() { return kPackRows / kFlashTileRows + kPackRows; }

// Chunk tables hold a chunk per row at most: only the chunks that use chunk states are
// bounded by the mixer's room (PlanPacks).
PackTables LayoutPack(void* base) {
  const int64_t R = kPackRows, S = kPackRows, Tt = MaxPackTiles(), max_chunks = kPackRows;
  char* p = static_cast<char*>(base);
  size_t off = 0;
  auto take = [&](size_t bytes) {
    char* at = p + off;
    off += (bytes + 15) / 16 * 16;
    return at;
  };
  PackTables t;
  t.positions = reinterpret_cast<int64_t*>(take(R * sizeof(int64_t)));
  t.caps = reinterpret_cast<int64_t*>(take(S * sizeof(int64_t)));
  t.state_ptrs = reinterpret_cast<float**>(take(S * sizeof(float*)));
  t.out_ptrs = reinterpret_cast<float**>(take(S * sizeof(float*)));
  t.kv_ptrs = reinterpret_cast<void**>(take(S * sizeof(void*)));
  t.ids = reinterpret_cast<int32_t*>(take(R * sizeof(int32_t)));
  t.row_seq = reinterpret_cast<int32_t*>(take(R * sizeof(int32_t)));
  t.seq_row0 = reinterpret_cast<int32_t*>(take((S + 1) * sizeof(int32_t)));
  t.seq_chunk0 = reinterpret_cast<int32_t*>(take((S + 1) * sizeof(int32_t)));
  t.chunk_row0 = reinterpret_cast<int32_t*>(take(max_chunks * sizeof(int32_t)));
  t.chunk_seq = reinterpret_cast<int32_t*>(take(max_chunks * sizeof(int32_t)));
  t.tile_seq = reinterpret_cast<int32_t*>(take(Tt * sizeof(int32_t)));
  t.tile_q0 = reinterpret_cast<int32_t*>(take(Tt * sizeof(int32_t)));
  t.logit_rows = reinterpret_cast<int32_t*>(take(R * sizeof(int32_t)));
  t.targets = reinterpret_cast<int32_t*>(take(R * sizeof(int32_t)));
  t.input_bytes = off;
  t.lp = reinterpret_cast<float*>(take(R * sizeof(float)));
  t.am = reinterpret_cast<int32_t*>(take(R * sizeof(int32_t)));
  t.total_bytes = off;
  return t;
}

}  // namespace

size_t CudaModel::PackTableBytes() const { return LayoutPack(nullptr).total_bytes; }

// ---- packed path ------------------------------------------------------------------------

absl::Status CudaModel::RunPack(absl::Span<const ForwardItem> items,
                                absl::Span<ForwardOutput> outputs,
                                absl::Span<const PackSegment> given, const LayerSpan* span) {
  cudaStream_t s = ctx_->stream();
  // The sequences that use chunk states first (PackView::state_seqs): the others need no
  // room there. An item's results do not depend on its place in the pack.
  std::vector<PackSegment> segments(given.begin(), given.end());
  const int state_seqs = static_cast<int>(
      std::stable_partition(segments.begin(), segments.end(),
                            [](const PackSegment& seg) { return seg.uses_chunk_states; }) -
      segments.begin());
  const int num_seqs = static_cast<int>(segments.size());
  const int first_layer = span == nullptr ? 0 : span->first_layer;
  const int end_layer = span == nullptr ? static_cast<int>(L_) : span->first_layer + 1;
  // Every KV cache already holds room for all of its item's tokens: Forward reserved it.
  // The previous pack's outputs have been read (RunPack ends with a synchronisation).
  PackTables host = LayoutPack(pack_host_);
  PackTables dev = LayoutPack(pack_dev_.get());
  pack_seq_row0_.assign(1, 0);
  pack_seq_pos0_.clear();
  pack_kv_.clear();
  pack_kv_cap_.clear();
  int rows = 0, chunks = 0, tiles = 0, logit_count = 0;
  // Per logit row: which item and token it reports, and whether the item wants the row.
  struct LogitRow {
    size_t item;
    int64_t t;
  };
  std::vector<LogitRow> logit_rows;
  host.seq_row0[0] = 0;
  host.seq_chunk0[0] = 0;
  for (int q = 0; q < num_seqs; ++q) {
    const PackSegment& seg = segments[q];
    const ForwardItem& item = items[seg.item];
    const int64_t T = static_cast<int64_t>(item.tokens.size());
    int64_t pos0 = 0;
    if (span != nullptr) {
      // Layer-major: no state; this layer's keys and values live in the span's one-layer
      // cache, addressed as if it were plane `first_layer` of a whole one.
      pos0 = seg.offset;
      host.state_ptrs[q] = nullptr;
      host.out_ptrs[q] = nullptr;
      host.kv_ptrs[q] = static_cast<char*>(span->kv_layer) -
                        static_cast<int64_t>(first_layer) * 2 * span->kv_cap * layout_.kv_row_bytes;
      host.caps[q] = span->kv_cap;
    } else {
      // The state read: the item's own, or its read-only start (then nothing is kept).
      const auto* st = static_cast<const CudaSequenceState*>(item.state ? item.state : item.start);
      pos0 = st->position_;
      host.state_ptrs[q] = st->recurrent_.as<float>();
      host.out_ptrs[q] = item.state != nullptr ? st->recurrent_.as<float>() : nullptr;
      host.kv_ptrs[q] = st->kv_.get();
      host.caps[q] = st->kv_cap_;
    }
    const int row0 = rows;
    for (int64_t j = 0; j < seg.length; ++j) {
      const int64_t t = seg.offset + j;
      host.ids[rows] = item.tokens[t];
      host.positions[rows] = pos0 + j;
      host.row_seq[rows] = q;
      const int32_t target = item.targets.empty() ? -1 : item.targets[t];
      const bool last = (item.want_last_logprobs || item.want_last_argmax) && t == T - 1;
      if (target >= 0 || last || item.want_all_logits) {
        host.logit_rows[logit_count] = rows;
        host.targets[logit_count] = target;
        logit_rows.push_back({seg.item, t});
        ++logit_count;
      }
      ++rows;
    }
    for (int c0 = row0; c0 < rows; c0 += kGlaChunk) {
      host.chunk_row0[chunks] = c0;
      host.chunk_seq[chunks] = q;
      ++chunks;
    }
    for (int64_t q0 = 0; q0 < seg.length; q0 += kFlashTileRows) {
      host.tile_seq[tiles] = q;
      host.tile_q0[tiles] = static_cast<int32_t>(q0);
      ++tiles;
    }
    host.seq_row0[q + 1] = rows;
    host.seq_chunk0[q + 1] = chunks;
    pack_seq_row0_.push_back(rows);
    pack_seq_pos0_.push_back(pos0);
    pack_kv_.push_back(host.kv_ptrs[q]);
    pack_kv_cap_.push_back(host.caps[q]);
  }
  HG_CUDA_RETURN(
      cudaMemcpyAsync(pack_dev_.get(), pack_host_, host.input_bytes, cudaMemcpyHostToDevice, s));
  pack_ = PackView{};
  pack_.rows = rows;
  pack_.num_seqs = num_seqs;
  pack_.num_chunks = chunks;
  pack_.num_tiles = tiles;
  pack_.seq_row0 = dev.seq_row0;
  pack_.seq_chunk0 = dev.seq_chunk0;
  pack_.chunk_row0 = dev.chunk_row0;
  pack_.chunk_seq = dev.chunk_seq;
  pack_.row_seq = dev.row_seq;
  pack_.tile_seq = dev.tile_seq;
  pack_.tile_q0 = dev.tile_q0;
  pack_.state_seqs = state_seqs;
  pack_.state_chunks = host.seq_chunk0[state_seqs];
  cur_ = {dev.ids,  dev.positions, dev.state_ptrs, dev.kv_ptrs,
          dev.caps, dev.seq_row0,  dev.row_seq,    dev.out_ptrs};
  if (span != nullptr && first_layer > 0) {
    // The segment's residual stream after the layers before (one segment per pack here).
    const size_t bytes = static_cast<size_t>(rows) * D_ * sizeof(float);
    const size_t at = static_cast<size_t>(segments[0].offset) * D_;
    HG_CUDA_RETURN(
        cudaMemcpyAsync(h_.get(), span->hidden + at, bytes, cudaMemcpyDeviceToDevice, s));
    HG_CUDA_RETURN(
        cudaMemcpyAsync(delta_.get(), span->delta + at, bytes, cudaMemcpyDeviceToDevice, s));
  }
  // Where the last layer runs over the logit rows alone, x holds them in order from row 0.
  const bool x_holds_logit_rows = TailOnLogitRows(rows, logit_count, end_layer);
  HG_RETURN_IF_ERROR(EnqueueLayers(
      rows, num_seqs, /*decode=*/false, first_layer, end_layer,
      x_holds_logit_rows ? LogitRowList{dev.logit_rows, logit_count} : LogitRowList{}));
  if (end_layer < L_) {
    const size_t bytes = static_cast<size_t>(rows) * D_ * sizeof(float);
    const size_t at = static_cast<size_t>(segments[0].offset) * D_;
    HG_CUDA_RETURN(
        cudaMemcpyAsync(span->hidden + at, h_.get(), bytes, cudaMemcpyDeviceToDevice, s));
    HG_CUDA_RETURN(
        cudaMemcpyAsync(span->delta + at, delta_.get(), bytes, cudaMemcpyDeviceToDevice, s));
    // The next layer reads this pack's tables no more: wait before they are rewritten.
    HG_CUDA_RETURN(cudaStreamSynchronize(s));
    return absl::OkStatus();
  }
  for (const PackSegment& seg : segments) {
    if (items[seg.item].state == nullptr) continue;  // a read-only start stays as it was
    static_cast<CudaSequenceState*>(items[seg.item].state)->position_ += seg.length;
  }

  // Logits at the rows that need them, logit_rows_ at a time; full rows only when asked.
  std::vector<float> row_buf;
  for (int c0 = 0; c0 < logit_count; c0 += logit_rows_) {
    const int c = std::min(logit_rows_, logit_count - c0);
    bool any_full = false;
    for (int j = c0; j < c0 + c; ++j) {
      const ForwardItem& item = items[logit_rows[j].item];
      const bool last = item.want_last_logprobs &&
                        logit_rows[j].t == static_cast<int64_t>(item.tokens.size()) - 1;
      if (last || (item.top_k > 0 && host.targets[j] >= 0)) any_full = true;
    }
    // Consecutive rows (a scoring pass scores every row) are read in place where that keeps
    // the head GEMM's site (the same 16-byte alignment as logit_x_: the same algorithm, so
    // the same bits); others are gathered first.
    auto x_row = [&](int j) { return x_holds_logit_rows ? j : host.logit_rows[j]; };
    const int64_t x_offset = x_row(c0) * D_ * static_cast<int64_t>(ActSize(act_));
    const bool in_place = x_row(c0 + c - 1) - x_row(c0) == c - 1 && x_offset % 16 == 0;
    const void* head_x = static_cast<const char*>(x_.get()) + x_offset;
    if (!in_place) {
      HG_LAUNCH(GatherRows(x_.get(), dev.logit_rows + c0, c, static_cast<int>(D_), logit_x_.get(),
                           act_, s));
      head_x = logit_x_.get();
    }
    // bf16: the head in column slices of at most kHeadSliceCols (one pinned site each).
    // For a 64,000-token vocabulary the heuristic offers no workspace-free, unsplit
    // algorithm at M = 16,384, and the one found at M = 512 ran at ≈ 320 TFLOP/s against
    // ≈ 500 for 32,000 columns (docs/cuda.md, performance log entry 13). fp32 keeps one
    // GEMM (its results stay bitwise those of before).
    const int64_t slices = act_ == Act::kBF16 ? (V_ + kHeadSliceCols - 1) / kHeadSliceCols : 1;
    const int64_t slice_cols = (V_ + slices - 1) / slices;
    for (int64_t n0 = 0; n0 < V_; n0 += slice_cols) {
      const int64_t n = std::min(slice_cols, V_ - n0);
      HG_RETURN_IF_ERROR(pinned_gemm_->Run(s, c, n, D_, Mat(head_x, act_, D_),
                                           Mat(static_cast<const char*>(lm_head_.get()) +
                                                   n0 * D_ * static_cast<int64_t>(ActSize(act_)),
                                               act_, D_),
                                           logits_.as<float>() + n0, Act::kF32, V_));
    }
    // Raw logits (want_all_logits) leave before the log-softmax normalises rows in place.
    for (int j = c0; j < c0 + c; ++j) {
      const ForwardItem& item = items[logit_rows[j].item];
      if (!item.want_all_logits) continue;
      HG_CUDA_RETURN(cudaMemcpyAsync(
          outputs[logit_rows[j].item].logits.data() + logit_rows[j].t * V_,
          logits_.as<float>() + (j - c0) * V_, V_ * sizeof(float), cudaMemcpyDeviceToHost, s));
    }
    HG_LAUNCH(LogSoftmaxGather(logits_.as<float>(), c, static_cast<int>(V_), dev.targets + c0,
                               dev.lp + c0, dev.am + c0, any_full, s));
    if (!any_full) continue;
    for (int j = c0; j < c0 + c; ++j) {
      const ForwardItem& item = items[logit_rows[j].item];
      ForwardOutput& out = outputs[logit_rows[j].item];
      const int64_t t = logit_rows[j].t;
      const bool last =
          item.want_last_logprobs && t == static_cast<int64_t>(item.tokens.size()) - 1;
      const int32_t target = host.targets[j];
      if (!last && !(item.top_k > 0 && target >= 0)) continue;
      row_buf.resize(V_);
      HG_CUDA_RETURN(cudaMemcpyAsync(row_buf.data(), logits_.as<float>() + (j - c0) * V_,
                                     V_ * sizeof(float), cudaMemcpyDeviceToHost, s));
      HG_CUDA_RETURN(cudaStreamSynchronize(s));
      if (last) out.last_logprobs = row_buf;
      if (item.top_k > 0 && target >= 0) {
        out.top_k[t] = TopKLogprobs(row_buf, item.top_k, 0.0);
      }
    }
  }
  if (logit_count > 0) {
    HG_CUDA_RETURN(
        cudaMemcpyAsync(host.lp, dev.lp, logit_count * sizeof(float), cudaMemcpyDeviceToHost, s));
    HG_CUDA_RETURN(
        cudaMemcpyAsync(host.am, dev.am, logit_count * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
  }
  HG_CUDA_RETURN(cudaStreamSynchronize(s));
  for (int j = 0; j < logit_count; ++j) {
    const ForwardItem& item = items[logit_rows[j].item];
    ForwardOutput& out = outputs[logit_rows[j].item];
    const int64_t t = logit_rows[j].t;
    if (item.want_last_argmax && t == static_cast<int64_t>(item.tokens.size()) - 1) {
      out.last_argmax = host.am[j];
    }
    const int32_t target = host.targets[j];
    if (target >= 0) {
      out.logprob[t] = host.lp[j];
      out.argmax[t] = host.am[j];
      out.is_greedy[t] = host.am[j] == target ? 1 : 0;
    }
  }
  return absl::OkStatus();
}

bool CudaModel::RunsLayerMajor(const ForwardItem& item) const {
  return item.fresh_start && layout_.kv_row_bytes > 0 && state_floats_per_layer_ == 0 &&
         static_cast<int64_t>(item.tokens.size()) > kPackRows;
}

absl::Status CudaModel::RunLayerMajor(absl::Span<const ForwardItem> items,
                                      absl::Span<ForwardOutput> outputs, size_t index) {
  // A fresh item longer than one pack whose state nobody keeps: layer by layer over its
  // segments, holding the residual stream of every token (2 x D fp32) and one layer's keys
  // and values instead of every layer's. Each segment runs the same kernels on the same
  // rows, positions and keys as in the segment-major path, so the results are the same.
  const int64_t T = static_cast<int64_t>(items[index].tokens.size());
  LayerSpan span;
  span.kv_cap = KvCapacityFor(T);
  HG_ASSIGN_OR_RETURN(DeviceBuffer streams,
                      DeviceBuffer::Make(ctx_->pool(), 2 * T * D_ * sizeof(float)));
  HG_ASSIGN_OR_RETURN(DeviceBuffer kv,
                      DeviceBuffer::Make(ctx_->pool(), 2 * span.kv_cap * layout_.kv_row_bytes));
  span.hidden = streams.as<float>();
  span.delta = streams.as<float>() + T * D_;
  span.kv_layer = kv.get();
  for (int l = 0; l < L_; ++l) {
    span.first_layer = l;
    for (int64_t off = 0; off < T; off += kPackRows) {
      const PackSegment seg{index, off, std::min<int64_t>(kPackRows, T - off)};
      HG_RETURN_IF_ERROR(RunPack(items, outputs, absl::MakeConstSpan(&seg, 1), &span));
    }
  }
  return absl::OkStatus();
}

namespace {

int64_t SegmentChunks(const PackSegment& seg) { return (seg.length + kGlaChunk - 1) / kGlaChunk; }

// Whether a segment's chunks use the chunk states (ChunkScanHasWork, as the kernels decide
// it from the pack's state pointers): not those of a read-only fork that fits in one chunk.
bool UsesChunkStates(const ForwardItem& item, const PackSegment& seg) {
  const bool keeps_final_state = item.state != nullptr;
  const bool reads_start_in_place = item.state == nullptr && item.start != nullptr;
  return ChunkScanHasWork(static_cast<int>(SegmentChunks(seg)), keeps_final_state,
                          reads_start_in_place);
}

// First fit, in item order, at most one segment of an item per pack (its segments run in
// order, each after the state the previous one left), at most kPackRows rows and
// `max_chunks` chunks that use chunk states per pack.
std::vector<std::vector<PackSegment>> PlanPacks(
    const std::vector<std::vector<PackSegment>>& per_item, int64_t max_chunks) {
  std::vector<std::vector<PackSegment>> packs;
  std::vector<size_t> next(per_item.size(), 0);
  size_t remaining = 0;
  for (const auto& segs : per_item) remaining += segs.size();
  while (remaining > 0) {
    std::vector<PackSegment>& pack = packs.emplace_back();
    int64_t rows = 0, chunks = 0;
    for (size_t i = 0; i < per_item.size(); ++i) {
      if (next[i] == per_item[i].size()) continue;
      const PackSegment& seg = per_item[i][next[i]];
      const int64_t seg_chunks = seg.uses_chunk_states ? SegmentChunks(seg) : 0;
      if (rows + seg.length > kPackRows || chunks + seg_chunks > max_chunks) continue;
      pack.push_back(seg);
      rows += seg.length;
      chunks += seg_chunks;
      ++next[i];
      --remaining;
      if (rows == kPackRows) break;
    }
  }
  return packs;
}

int64_t PackStateChunks(absl::Span<const PackSegment> pack) {
  int64_t chunks = 0;
  for (const PackSegment& seg : pack) chunks += seg.uses_chunk_states ? SegmentChunks(seg) : 0;
  return chunks;
}

}  // namespace

absl::Status CudaModel::RunPacked(absl::Span<const ForwardItem> items,
                                  absl::Span<ForwardOutput> outputs,
                                  absl::Span<const size_t> packed_items) {
  // Segments at fixed offsets from each item's start (a function of the item alone).
  std::vector<std::vector<PackSegment>> per_item(packed_items.size());
  for (size_t i = 0; i < packed_items.size(); ++i) {
    const int64_t T = static_cast<int64_t>(items[packed_items[i]].tokens.size());
    for (int64_t off = 0; off < T; off += kPackRows) {
      PackSegment seg{packed_items[i], off, std::min<int64_t>(kPackRows, T - off)};
      seg.uses_chunk_states = UsesChunkStates(items[packed_items[i]], seg);
      per_item[i].push_back(seg);
    }
  }
  std::vector<std::vector<PackSegment>> packs = PlanPacks(per_item, max_pack_chunks_);
  // The chunk states take their room before any pack runs; where the budget refuses it,
  // the packs hold fewer chunks (results do not depend on the packing).
  int64_t most = 0;
  for (const auto& pack : packs) most = std::max(most, PackStateChunks(pack));
  HG_ASSIGN_OR_RETURN(const int64_t room, mixer_->ReservePackChunks(most));
  if (room < most) packs = PlanPacks(per_item, room);
  for (const auto& pack : packs) HG_RETURN_IF_ERROR(RunPack(items, outputs, pack));
  return absl::OkStatus();
}

// ---- decode path --------------------------------------------------------------------------

static_assert(kDecodeRows == kDecodeGemmMaxRows, "the decode GEMM serves the whole step");

int CudaModel::DecodeStepRows(int n) const {
  if (act_ != Act::kBF16 || !DecodeGemmEnabled()) return kDecodeRows;
  return std::min(kDecodeRows, (n + 7) / 8 * 8);
}

bool CudaModel::DecodeAddsToResidual() const { return act_ == Act::kBF16 && DecodeGemmEnabled(); }

absl::Status CudaModel::EnqueueDecodeStep(int rows) {
  HG_RETURN_IF_ERROR(EnqueueLayers(rows, rows, /*decode=*/true));
  const MatRef head_x = Mat(x_.get(), act_, D_), head_w = Mat(lm_head_.get(), act_, D_);
  if (DecodeGemmEnabled() && DecodeGemmFits(rows, D_, head_x, head_w)) {
    HG_RETURN_IF_ERROR(
        DecodeGemmNT(ctx_->stream(), rows, V_, D_, head_x, head_w, logits_.get(), Act::kF32, V_));
  } else {
    HG_RETURN_IF_ERROR(
        GemmNT(ctx_->cublas(), kDecodeRows, V_, D_, head_x, head_w, logits_.get(), Act::kF32, V_));
  }
  DecodeIo* io = decode_io_.as<DecodeIo>();
  HG_LAUNCH(LogSoftmaxGather(logits_.as<float>(), rows, static_cast<int>(V_), io->targets, io->lp,
                             io->am, true, ctx_->stream()));
  return absl::OkStatus();
}

absl::Status CudaModel::RunDecodeGroup(absl::Span<const ForwardItem* const> items,
                                       absl::Span<ForwardOutput* const> outs) {
  cudaStream_t s = ctx_->stream();
  const int n = static_cast<int>(items.size());
  // Every KV cache already holds room for this step: Forward reserved it.
  HG_CUDA_RETURN(cudaStreamSynchronize(s));
  // One packed upload per step (pinned -> device); padding rows have null pointers.
  DecodeIo* hio = static_cast<DecodeIo*>(host_io_);
  for (int r = 0; r < kDecodeRows; ++r) {
    if (r < n) {
      const ForwardItem& it = *items[r];
      auto* st = static_cast<CudaSequenceState*>(it.state);
      hio->ids[r] = it.tokens[0];
      hio->positions[r] = st->position_;
      hio->state_ptrs[r] = st->recurrent_.as<float>();
      hio->kv_ptrs[r] = st->kv_.get();
      hio->caps[r] = st->kv_cap_;
      hio->targets[r] = it.targets.empty() ? -1 : it.targets[0];
    } else {
      hio->ids[r] = 0;
      hio->positions[r] = 0;
      hio->state_ptrs[r] = nullptr;
      hio->kv_ptrs[r] = nullptr;
      hio->caps[r] = 0;
      hio->targets[r] = -1;
    }
  }
  DecodeIo* dio = decode_io_.as<DecodeIo>();
  cur_ = {dio->ids,
          dio->positions,
          dio->state_ptrs,
          dio->kv_ptrs,
          dio->caps,
          identity_rows_.as<int32_t>(),
          identity_rows_.as<int32_t>()};
  HG_CUDA_RETURN(cudaMemcpyAsync(dio, hio, offsetof(DecodeIo, lp), cudaMemcpyHostToDevice, s));
  std::vector<DecodeStepRow> step_rows(n);
  for (int r = 0; r < n; ++r) {
    const auto* st = static_cast<const CudaSequenceState*>(items[r]->state);
    step_rows[r] = {st->position_, &st->kv_lineage_};
  }
  HG_RETURN_IF_ERROR(mixer_->PrepareDecodeStep(step_rows, s));

  const int rows = DecodeStepRows(n);
  cudaGraphExec_t& decode_graph = decode_graphs_[rows / 8 - 1];
  if (graphs_enabled_ && decode_graph == nullptr && decode_eager_steps_[rows / 8 - 1] > 0) {
    // Capture after one eager step, so cuBLAS has set itself up outside the capture.
    cudaGraph_t graph = nullptr;
    HG_CUDA_RETURN(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    const absl::Status enq = EnqueueDecodeStep(rows);
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    if (enq.ok() && end == cudaSuccess &&
        cudaGraphInstantiate(&decode_graph, graph, 0) == cudaSuccess) {
      cudaGraphDestroy(graph);
    } else {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      decode_graph = nullptr;
      graphs_enabled_ = false;
      std::fprintf(stderr, "hgeval cuda: decode graph capture failed (%s); running eagerly\n",
                   enq.ok() ? cudaGetErrorString(end) : std::string(enq.message()).c_str());
    }
  }
  if (decode_graph != nullptr) {
    HG_CUDA_RETURN(cudaGraphLaunch(decode_graph, s));
  } else {
    HG_RETURN_IF_ERROR(EnqueueDecodeStep(rows));
    ++decode_eager_steps_[rows / 8 - 1];
  }
  HG_CUDA_RETURN(cudaMemcpyAsync(hio->lp, dio->lp, sizeof(DecodeIo) - offsetof(DecodeIo, lp),
                                 cudaMemcpyDeviceToHost, s));
  HG_CUDA_RETURN(cudaStreamSynchronize(s));
  std::vector<float> row_buf;
  for (int r = 0; r < n; ++r) {
    const ForwardItem& it = *items[r];
    ForwardOutput* out = outs[r];
    static_cast<CudaSequenceState*>(it.state)->position_ += 1;
    const int32_t target = hio->targets[r];
    if (it.want_last_argmax) out->last_argmax = hio->am[r];
    const bool need_row = it.want_last_logprobs || (it.top_k > 0 && target >= 0);
    if (need_row) {
      row_buf.resize(V_);
      HG_CUDA_RETURN(cudaMemcpy(row_buf.data(), logits_.as<float>() + r * V_, V_ * sizeof(float),
                                cudaMemcpyDeviceToHost));
      if (it.want_last_logprobs) out->last_logprobs = row_buf;
    }
    if (target >= 0) {
      out->logprob[0] = hio->lp[r];
      out->argmax[0] = hio->am[r];
      out->is_greedy[0] = hio->am[r] == target ? 1 : 0;
      if (it.top_k > 0) out->top_k[0] = TopKLogprobs(row_buf, it.top_k, 0.0);
    }
  }
  return absl::OkStatus();
}

absl::Status CudaModel::Forward(absl::Span<const ForwardItem> given,
                                absl::Span<ForwardOutput> outputs) {
  if (outputs.size() != given.size()) {
    return absl::InvalidArgumentError("Forward: outputs.size() must equal items.size()");
  }
  HG_RETURN_IF_ERROR(ValidateForwardItems(given, outputs.size(), V_, info_.max_context));
  DeviceGuard guard(ctx_->device());
  // Items continuing from a read-only start: the recurrent families read it in place; a
  // LLaMA item needs its own KV cache to write its keys into, and an item longer than a
  // pack a state to carry between its segments, so they get a copy.
  std::vector<ForwardItem> resolved(given.begin(), given.end());
  DeviceBuffer copy_table;  // the batched KV copies' table, until the call's work is done
  std::vector<std::unique_ptr<SequenceState>> copies;
  std::vector<KvPrefixCopy> kv_copies;
  const bool batch_kv_copies = layout_.kv_row_bytes > 0 && KvCopiesBatched();
  CudaHostCounters& counters = CudaHostCounters::Get();
  std::optional<ScopedNanos> fork_timer(std::in_place, &counters.fork_ns);
  absl::flat_hash_set<const SequenceState*> seen;
  std::vector<size_t> layer_major;
  for (size_t i = 0; i < resolved.size(); ++i) {
    ForwardItem& it = resolved[i];
    if (it.fresh_start) {
      if (RunsLayerMajor(it)) {
        layer_major.push_back(i);
        continue;
      }
      // Otherwise a state of its own for the call, as if the caller had given one.
      std::unique_ptr<SequenceState> fresh = NewState();
      if (fresh == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrCat("Forward: item ", i, ": no device memory for a new sequence state"));
      }
      it.state = fresh.get();
      it.fresh_start = false;
      copies.push_back(std::move(fresh));
      continue;
    }
    const auto* src = dynamic_cast<const CudaSequenceState*>(it.state ? it.state : it.start);
    if (src == nullptr || src->owner() != this) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i, " has no state made by this model"));
    }
    // A pack runs each state at most once (its segments would race).
    if (it.state != nullptr && !seen.insert(it.state).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("Forward: item ", i, " shares its state with another item"));
    }
    const int64_t T = static_cast<int64_t>(it.tokens.size());
    if (it.start != nullptr && ReadOnlyForkCopiesStart(T)) {
      HG_ASSIGN_OR_RETURN(
          std::unique_ptr<CudaSequenceState> copy,
          ForkForItem(*src, static_cast<int64_t>(it.tokens.size()),
                      batch_kv_copies && src->recurrent_.size() == 0 ? &kv_copies : nullptr));
      it.state = copy.get();
      it.start = nullptr;
      copies.push_back(std::move(copy));
      counters.fork_copies.fetch_add(1, std::memory_order_relaxed);
      counters.fork_copy_bytes.fetch_add(2 * L_ * src->position_ * layout_.kv_row_bytes,
                                         std::memory_order_relaxed);
    }
  }
  HG_RETURN_IF_ERROR(EnqueueKvPrefixCopies(kv_copies, &copy_table));
  fork_timer.reset();
  // Every KV cache takes its room before anything runs: a call that does not fit the
  // budget fails here, with no state advanced (a grown cache keeps its contents).
  if (layout_.kv_row_bytes > 0) {
    for (const ForwardItem& it : resolved) {
      if (it.state == nullptr) continue;
      auto* st = static_cast<CudaSequenceState*>(it.state);
      const int64_t T = static_cast<int64_t>(it.tokens.size());
      HG_RETURN_IF_ERROR(EnsureKvCapacity(st, st->position_ + T, /*decoding=*/T == 1));
    }
  }
  absl::Span<const ForwardItem> items = resolved;
  std::vector<const ForwardItem*> decode_items;
  std::vector<ForwardOutput*> decode_outs;
  std::vector<size_t> packed_items;
  size_t next_layer_major = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const ForwardItem& it = items[i];
    ForwardOutput& out = outputs[i];
    const size_t T = it.tokens.size();
    const bool runs_layer_major =
        next_layer_major < layer_major.size() && layer_major[next_layer_major] == i;
    if (runs_layer_major) ++next_layer_major;
    out.logprob.assign(T, 0.0f);
    out.is_greedy.assign(T, 0);
    out.argmax.assign(T, -1);
    out.top_k.clear();
    if (it.top_k > 0) out.top_k.resize(T);
    out.last_logprobs.clear();
    out.last_argmax = -1;
    out.logits.clear();
    if (it.want_all_logits) out.logits.resize(T * V_);
    // The decode step normalises its logits in place: raw logits come from a pack.
    if (runs_layer_major) continue;
    if (T == 1 && it.state != nullptr && !it.want_all_logits) {
      decode_items.push_back(&it);
      decode_outs.push_back(&out);
    } else if (T >= 1) {
      packed_items.push_back(i);  // a one-token fork of a read-only start too
    }
  }
  for (size_t g0 = 0; g0 < decode_items.size(); g0 += kDecodeRows) {
    const size_t n = std::min<size_t>(kDecodeRows, decode_items.size() - g0);
    HG_RETURN_IF_ERROR(RunDecodeGroup(absl::MakeConstSpan(decode_items).subspan(g0, n),
                                      absl::MakeConstSpan(decode_outs).subspan(g0, n)));
  }
  if (!packed_items.empty()) HG_RETURN_IF_ERROR(RunPacked(items, outputs, packed_items));
  for (size_t i : layer_major) HG_RETURN_IF_ERROR(RunLayerMajor(items, outputs, i));
  return absl::OkStatus();
}

}  // namespace hgeval::cuda
