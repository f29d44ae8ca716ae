// Pack-table lookups of the chunkwise GLA kernels (kernels_chunk_gla.cu's fp32 ones and
// kernels_chunk_mma.cu's tensor-core ones): which rows a chunk covers, which sequence it
// belongs to, and where a sequence's start and final states live.
#ifndef HGEVAL_ENGINE_CUDA_CHUNK_PACK_CUH_
#define HGEVAL_ENGINE_CUDA_CHUNK_PACK_CUH_

#include <cuda_runtime.h>

#include "engine/cuda/kernels.h"

namespace hgeval::cuda {

constexpr int kC = kGlaChunk;

// Pack-table lookups; null tables mean one sequence of pack.rows rows.
__device__ __forceinline__ int ChunkRow0(const PackView& p, int c) {
  return p.chunk_row0 ? p.chunk_row0[c] : c * kC;
}
__device__ __forceinline__ int SeqRowEnd(const PackView& p, int s) {
  return p.seq_row0 ? p.seq_row0[s + 1] : p.rows;
}
__device__ __forceinline__ int ChunkSeq(const PackView& p, int c) {
  return p.chunk_seq ? p.chunk_seq[c] : 0;
}
// Rows of chunk c (at most kC, fewer at its sequence's end).
__device__ __forceinline__ int ChunkRows(const PackView& p, int c) {
  return min(kC, SeqRowEnd(p, ChunkSeq(p, c)) - ChunkRow0(p, c));
}
__device__ __forceinline__ int SeqChunkEnd(const PackView& p, int s) {
  return p.seq_chunk0 ? p.seq_chunk0[s + 1] : p.num_chunks;
}
__device__ __forceinline__ bool IsFirstChunk(const PackView& p, int c) {
  return c == (p.seq_chunk0 ? p.seq_chunk0[ChunkSeq(p, c)] : 0);
}
// Whether sequence s keeps its final state: always in the single-sequence form
// (state_ptrs null); in the packed form unless it is a read-only start (null out entry).
__device__ __forceinline__ bool KeepsFinalState(float* const* state_ptrs, float* const* out_ptrs,
                                                int s) {
  if (state_ptrs == nullptr) return true;
  return (out_ptrs != nullptr ? out_ptrs[s] : state_ptrs[s]) != nullptr;
}
// Whether the output kernel reads sequence s's start state in place for its first chunk:
// in the packed form when the final state goes elsewhere (or nowhere). A state advanced
// in place is overwritten by the scan before the output kernel runs, so its first chunk
// reads the copy the scan leaves in the chunk states, as every later chunk does.
__device__ __forceinline__ bool ReadsStartInPlace(float* const* state_ptrs, float* const* out_ptrs,
                                                  int s) {
  return state_ptrs != nullptr && out_ptrs != nullptr && out_ptrs[s] != state_ptrs[s];
}

// Sequence s's walk over its chunks (the fp32 state scan, bf16 mode's state walk): its
// start state (null: zero) and where its final state goes (out_ptrs null: the state
// pointer; a null entry: nowhere; `single` for the single-sequence form), both at
// layer_offset; its first chunk and chunk count; the first chunk whose S_c is stored (1
// where the output kernel reads the start in place); how many chunks' U feed the state
// (not the last where no final state is kept).
struct SeqWalk {
  float* state;
  float* out;
  int first, chunks, first_written, with_u;
};
__device__ __forceinline__ SeqWalk SeqWalkOf(const PackView& p, float* const* state_ptrs,
                                             float* const* out_ptrs, int64_t layer_offset,
                                             float* single, int s) {
  SeqWalk w{single, single, 0, 0, 0, 0};
  if (state_ptrs != nullptr) {
    w.state = state_ptrs[s];
    w.out = out_ptrs != nullptr ? out_ptrs[s] : w.state;
    if (w.state != nullptr) w.state += layer_offset;
    if (w.out != nullptr) w.out += layer_offset;
  }
  w.first = p.seq_chunk0 ? p.seq_chunk0[s] : 0;
  w.chunks = SeqChunkEnd(p, s) - w.first;
  w.first_written = ReadsStartInPlace(state_ptrs, out_ptrs, s) ? 1 : 0;
  w.with_u = w.out != nullptr ? w.chunks : w.chunks - 1;
  return w;
}

// The pack of one sequence of `tokens` rows (null tables): the single-sequence launchers.
inline PackView SingleSequence(int tokens) {
  PackView p;
  p.rows = tokens;
  p.num_seqs = 1;
  p.num_chunks = (tokens + kC - 1) / kC;
  return p;
}

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_CHUNK_PACK_CUH_
