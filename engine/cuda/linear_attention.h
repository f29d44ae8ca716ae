// The gated linear attention recurrence shared by HGRN2, GLA and TNL on the GPU (the CPU's
// engine/cpu/linear_attention.h): S = diag(exp g) S + k vᵀ, o = scale · Sᵀ q per head,
// over q, k, g (log decay), v in the GLA layout ([rows, H, dk], v [rows, H, dv]). Packs
// run the chunkwise form (specs §2.5), one-token decode steps the recurrent step.
#ifndef HGEVAL_ENGINE_CUDA_LINEAR_ATTENTION_H_
#define HGEVAL_ENGINE_CUDA_LINEAR_ATTENTION_H_

#include <cstdint>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/device_allocator.h"
#include "engine/cuda/kernels_chunk_mma.h"
#include "engine/cuda/token_mixer.h"

namespace hgeval::cuda {

// Device memory for the chunkwise recurrences' per-chunk states of one pack, at most.
constexpr int64_t kChunkStateBudget = 1ll << 30;
// Chunk-state room grows in steps of this many chunks.
constexpr int64_t kChunkStateStep = 64;

// A pack's v read in place from another buffer (HGRN2's i columns of its projection),
// `ld` values a row; null: the attention's own v().
struct PackValues {
  const void* v = nullptr;
  int64_t ld = 0;
};

// A pack's q, and k, read in place from one projection, `ld` values a row; null: the
// attention's q(), k(), as the gate kernel wrote them. silu: the chunk kernels take their
// SiLU (HGRN2's q columns; TNL's q and k in its layers without LRPE), else they read them
// as they are (GLA's q and k). The forms RawQk (kernels_chunk_mma.h) allows.
struct PackRawQk {
  const void* q = nullptr;
  const void* k = nullptr;
  int64_t ld = 0;
  bool silu = false;
};

class CudaLinearAttention {
 public:
  CudaLinearAttention() = default;
  // act kBF16: packs run the tensor-core kernels (kernels_chunk_mma.h); kF32: the fp32 ones.
  CudaLinearAttention(int64_t heads, int64_t dk, int64_t dv, float scale, Act act)
      : heads_(heads), dk_(dk), dv_(dv), scale_(scale), tensor_cores_(act == Act::kBF16) {}

  int64_t heads() const { return heads_; }
  int64_t dk() const { return dk_; }
  int64_t dv() const { return dv_; }
  float scale() const { return scale_; }
  // One layer's state per sequence: [H, dk, dv].
  int64_t state_floats() const { return heads_ * dk_ * dv_; }
  // Chunks a pack may hold: one whole segment's, more while their states fit
  // kChunkStateBudget (short sequences count one chunk each).
  int64_t max_pack_chunks() const { return max_pack_chunks_; }

  // q, k, g, v for kPackRows rows, and room for one segment's chunk states (what a long
  // sequence needs); packs of many short sequences grow it (ReserveChunks). Sized in bytes
  // for how a pack holds them (PackOperandsAct) at dk() and at each of `call_dks` (the key
  // dims of Enqueue's call_dk a family uses besides dk()). pack_values, pack_queries false:
  // packs bring their v, q (Enqueue's PackValues, PackRawQk), so v(), q() hold only a
  // decode step's rows.
  absl::Status Allocate(DeviceAllocator& alloc, std::initializer_list<int64_t> call_dks = {},
                        bool pack_values = true, bool pack_queries = true);
  // Grows the chunk states' room towards `chunks` (at most max_pack_chunks()); returns the
  // chunks it holds room for, fewer than asked when the memory budget refuses more.
  absl::StatusOr<int64_t> ReserveChunks(int64_t chunks);

  // fp32 q, k, v (decode steps, kDecodeRows rows), or a pack's as PackOperandsAct(call_dk)
  // in the same room; g is fp32 always.
  float* q() const { return q_.as<float>(); }
  float* k() const { return k_.as<float>(); }
  float* g() const { return g_.as<float>(); }
  float* v() const { return v_.as<float>(); }
  // How a pack's q, k and v are held for a call of key dim `call_dk` (0: dk()): bf16 where
  // the tensor-core kernels run (bf16 mode; they round v, and q and k once scaled by their
  // decays, to bf16 for their products: half the bytes), else fp32. The gate kernel writing
  // them and Enqueue both follow it.
  Act PackOperandsAct(int64_t call_dk = 0) const;

  // How Enqueue holds o: a pack's as PackOperandsAct(call_dk) (bf16 where the tensor-core
  // kernels run, as fla holds o in the input dtype: half the bytes for the norm after it),
  // a decode step's as fp32.
  Act OutputAct(const MixerPass& pass, int64_t call_dk = 0) const;

  // o [rows, H, dv] (as OutputAct) from q, k, g, v; states at `state_offset` floats into each
  // sequence's state. Packs: chunk-local cumsum of g, chunk states, output (none where o is
  // null: the states alone, for a pass whose output nobody reads). `call_dk` (0:
  // dk()) runs this call with a smaller key dim, q, k, g as [rows, H, call_dk] and the
  // state's heads packed at call_dk · dv in the first part of its layer (TNL's layers
  // without LRPE: their second key half would be zeros, doubling the work for nothing).
  // `g_chunk_cumulative`: a pack's g already holds the chunk-local cumsum (a gate kernel
  // fused with it, kernels_fused_gates.h), so the cumsum pass is skipped. `g_layout`: how a
  // pack's g is held (kPerHead: one value per row and head, TNL's constant decay; only
  // where PackTakesHeadDecay, and with g_chunk_cumulative); decode steps read g per key.
  // `values`, `raw`: a pack's v, q (and k) read in place (bf16 packs on the tensor-core
  // kernels only).
  absl::Status Enqueue(const MixerPass& pass, int64_t state_offset, void* o, int64_t call_dk = 0,
                       bool g_chunk_cumulative = false, DecayLayout g_layout = DecayLayout::kPerKey,
                       PackValues values = {}, PackRawQk raw = {}) const;
  // Whether packs may read v, q or k in place (Enqueue's PackValues, PackRawQk) from a
  // buffer whose rows hold `ld` values and whose operand starts at column `offset`: bf16
  // packs on the tensor-core kernels, rows and start 16-byte aligned (the kernels' copies).
  bool ReadsOperandInPlace(int64_t offset, int64_t ld) const {
    return PackOperandsAct() == Act::kBF16 && ChunkMmaReadsBf16InPlace(offset, ld);
  }
  // Whether a pack of key dim `call_dk` (0: dk()) may hold g per head: the tensor-core
  // kernels run it (bf16 mode).
  bool PackTakesHeadDecay(int64_t call_dk = 0) const {
    return PackOperandsAct(call_dk) == Act::kBF16;
  }

 private:
  // Whether a pack of `rows` rows at key dim `call_dk` fits k, (own_queries) q,
  // (own_values) v and a chunk's state.
  bool HoldsPack(int rows, int64_t call_dk, bool own_queries, bool own_values) const;

  int64_t heads_ = 0, dk_ = 0, dv_ = 0;
  float scale_ = 1.0f;
  bool tensor_cores_ = false;
  int64_t max_pack_chunks_ = 0;
  int64_t reserved_chunks_ = 0;  // chunk states chunk_states_ has room for
  int64_t chunk_bytes_ = 0;      // one chunk's states: bf16 where the state walk runs
  size_t q_bytes_ = 0, k_bytes_ = 0, v_bytes_ = 0;
  DevicePool* pool_ = nullptr;
  DeviceBuffer q_, k_, g_, v_, chunk_states_;
};

// A token mixer whose packs run a CudaLinearAttention (HGRN2, GLA, TNL): the chunk states'
// room is the attention's. The family's constructor sets attention_.
class LinearAttentionMixer : public CudaTokenMixer {
 public:
  int64_t MaxPackChunks() const final { return attention_.max_pack_chunks(); }
  absl::StatusOr<int64_t> ReservePackChunks(int64_t chunks) final {
    return attention_.ReserveChunks(chunks);
  }

 protected:
  CudaLinearAttention attention_;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_LINEAR_ATTENTION_H_
