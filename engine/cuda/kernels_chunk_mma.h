// Chunkwise GLA recurrence on tensor cores (bf16 mode): the packed states and output
// launchers of kernels.h (ChunkGlaStatesPacked, ChunkGlaOutputPacked) with the same
// arguments and contract, their products run as bf16 mma.sync m16n8k16 with fp32
// accumulation. The cumsum is the fp32 one; the states are one walk over each sequence's
// chunks with S in fp32 registers, storing each chunk state S_c as bf16 (the output kernel
// rounds S_c to bf16 for its mma anyway: same bits, half the bytes) and final states in
// fp32. `chunk_states` is room for fp32 states: bf16 ones use its first half; where the
// fp32 kernels run instead (ChunkMmaTakesBf16Values false) they keep fp32 states there.
// The two-pass form (local states, then the fp32 scan; fp32 S_c) stays callable.
// The packed forms take q, k and v as fp32 or bf16 together (`qkv_act`; G is fp32): a bf16
// operand is widened to fp32 exactly, so bf16 q, k, v give bitwise the results of fp32
// q, k, v holding the same (bf16-representable) values. bf16 halves their bytes.
// fp32 mode never calls these (its path stays the exact reference).
#ifndef HGEVAL_ENGINE_CUDA_KERNELS_CHUNK_MMA_H_
#define HGEVAL_ENGINE_CUDA_KERNELS_CHUNK_MMA_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/cuda/kernels.h"

namespace hgeval::cuda {

// Where G (the chunk-local cumulative log decay) holds its values: one per (row, head, key)
// ([rows, H, dk]: HGRN2's and GLA's data-dependent decays), or one per (row, head) ([rows,
// H]: TNL's constant decay, alike for every key of a head; fla's chunk_simple_gla). The
// per-head form reads dk times fewer G bytes and gives bitwise what the per-key form gives
// with each key of a head holding that value. It runs in the bf16 model path only (bf16
// q, k, v; the state walk; the pipelined output): elsewhere it is refused
// (cudaErrorInvalidValue).
enum class DecayLayout { kPerKey, kPerHead };

// Whether the tensor-core kernels run these head dims (their 16-byte loads need dk and dv
// multiples of 4; dk <= 256 is checked apart). Otherwise the launchers run the fp32
// kernels, which read fp32 q, k, v: bf16 ones are then refused (cudaErrorInvalidValue).
bool ChunkMmaTakesBf16Values(int dk, int dv);

// Whether the tensor-core kernels may read a bf16 operand in place (v_ld, RawQk below) from
// a buffer whose rows hold `ld` values, the operand starting at column `offset`: rows and
// start 16-byte aligned (their copies), the stride an int.
bool ChunkMmaReadsBf16InPlace(int64_t offset, int64_t ld);

// q and k read in place from one projection's columns instead of packed by a gate kernel
// (bf16 packs on the walk and the pipelined output kernel): q_ld, k_ld nonzero: that
// operand is read, its rows that many values apart (ChunkMmaReadsBf16InPlace; one stride
// where both are read). silu: the kernels take their SiLU as they load them
// (gate_maths.cuh's fast form rounded to bf16: the bits the gate kernel would have
// written), else they take them as they are. Three forms, others refused: q with its SiLU
// and g per key (HGRN2), q and k with their SiLU and g per head (TNL's layers without
// LRPE), q and k as they are with g per key (GLA, its k heads unshared).
struct RawQk {
  int64_t q_ld = 0;
  int64_t k_ld = 0;
  bool silu = false;
};

// The chunk states S_c (bf16) and final states in one kernel that walks each sequence's
// chunks in order, the running state in registers, each chunk's local state U_c by tensor
// cores and never stored (fla's chunk_fwd_h). Bitwise the two-pass form's results (its
// S_c rounded to bf16). v_ld: v's row stride in values (0: heads * dv); another (v read
// in place from a projection's columns, rows 16-byte aligned) with bf16 values only.
// raw: q and k read in place (RawQk; the walk reads k only).
cudaError_t ChunkGlaStatesPackedMma(const void* k, const float* G, DecayLayout g_layout,
                                    const void* v, Act qkv_act, const PackView& pack, int heads,
                                    int dk, int dv, float* const* state_ptrs,
                                    float* const* out_ptrs, int64_t layer_offset,
                                    void* chunk_states, cudaStream_t stream, int64_t v_ld = 0,
                                    const RawQk& raw = {});

// The two-pass form the one-kernel walk replaced: per-chunk local states U_c by tensor
// cores into chunk_states, then the fp32 scan (ChunkStateScan) over them in place (fp32
// S_c; its output form reads those). Kept for the test that holds the walk to its bits and
// the bench's micro rows.
cudaError_t ChunkGlaStatesPackedMmaTwoPass(const void* k, const float* G, const void* v,
                                           Act qkv_act, const PackView& pack, int heads, int dk,
                                           int dv, float* const* state_ptrs, float* const* out_ptrs,
                                           int64_t layer_offset, float* chunk_states,
                                           cudaStream_t stream);

// o = scale (q exp(G) S_c + A v), A the intra-chunk matrix: its 16-token diagonal blocks
// with exact per-element exponents in fp32, the blocks below them by tensor cores. The
// next key slice's q, k, G loads run during the current slice's maths and bf16 S_c and v
// tiles are copied by cp.async; the two-pass form (fp32 S_c) runs the same maths with each
// load after the previous maths, the reference the pipelined form keeps the bits of.
// o_act kBF16 stores o as bf16 (each fp32 value rounded to nearest, as fla's o is held in
// the input dtype: half the bytes for the norm after it); bf16 q, k, v only. v_ld: as
// ChunkGlaStatesPackedMma's. raw: q and k read in place (RawQk), with o as bf16.
cudaError_t ChunkGlaOutputPackedMma(const void* q, const void* k, const float* G,
                                    DecayLayout g_layout, const void* v, Act qkv_act,
                                    const void* chunk_states, float* const* state_ptrs,
                                    float* const* out_ptrs, int64_t layer_offset,
                                    const PackView& pack, int heads, int dk, int dv, float scale,
                                    void* o, cudaStream_t stream, Act o_act = Act::kF32,
                                    int64_t v_ld = 0, const RawQk& raw = {});
cudaError_t ChunkGlaOutputPackedMmaTwoPass(const void* q, const void* k, const float* G,
                                           const void* v, Act qkv_act, const float* chunk_states,
                                           float* const* state_ptrs, float* const* out_ptrs,
                                           int64_t layer_offset, const PackView& pack, int heads,
                                           int dk, int dv, float scale, float* o,
                                           cudaStream_t stream);

// Single-sequence forms (tests): as ChunkGlaStates / ChunkGlaOutput in kernels.h.
cudaError_t ChunkGlaStatesMma(const float* k, const float* G, const float* v, int tokens, int heads,
                              int dk, int dv, float* state, void* chunk_states,
                              cudaStream_t stream);
cudaError_t ChunkGlaStatesMmaTwoPass(const float* k, const float* G, const float* v, int tokens,
                                     int heads, int dk, int dv, float* state, float* chunk_states,
                                     cudaStream_t stream);
cudaError_t ChunkGlaOutputMma(const float* q, const float* k, const float* G, const float* v,
                              const void* chunk_states, int tokens, int heads, int dk, int dv,
                              float scale, float* o, cudaStream_t stream);

// Phase 2 of the chunk states (kernels_chunk_gla.cu): S_{c+1} = exp(G_last,c) S_c + U_c over
// each sequence's chunks, in place over the local states U in chunk_states. `single`
// is the single-sequence form's state (state_ptrs null).
cudaError_t ChunkStateScan(const float* G, const PackView& pack, int heads, int dk, int dv,
                           float* const* state_ptrs, float* const* out_ptrs, int64_t layer_offset,
                           float* single, float* chunk_states, cudaStream_t stream);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_KERNELS_CHUNK_MMA_H_
