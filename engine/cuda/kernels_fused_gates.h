// Gate kernels fused with the chunk-local cumsum of the log decay, for packs: what the gate
// kernel (kernels.h) followed by ChunkLocalCumsumPacked computed, in one pass over the
// pack (g is written once, already cumulative, instead of written, read and rewritten).
// q, k and v are written as `qkv_act` (bf16: each value rounded to nearest even, the
// operands the tensor-core chunk kernels take in bf16 mode, half the bytes of fp32); g, the
// cumulative log decay whose differences become exponents, stays fp32.
#ifndef HGEVAL_ENGINE_CUDA_KERNELS_FUSED_GATES_H_
#define HGEVAL_ENGINE_CUDA_KERNELS_FUSED_GATES_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/kernels.h"
#include "engine/cuda/kernels_chunk_mma.h"

namespace hgeval::cuda {

// TnlGates (kernels.h) over every chunk of `pack`, with g = the chunk-local cumulative sum
// of log_decay[head] (summed row by row from the chunk's first row, in ChunkCumsumKernel's
// order, so bitwise what the two kernels gave). One block per (chunk, head), e threads.
// g_layout kPerHead: g is that sum once per (row, head), [rows, heads]
// (kernels_chunk_mma.h), instead of repeated over the dk keys. proj is held as `qkv_act`
// too (bf16: the projection GEMM's output rounded). v is proj's v copied as it is; v null:
// not written (the chunk kernels read it in place, v_ld 4 heads e). q and k null together
// (no LRPE, g per head): neither is written (the chunk kernels read them raw from proj,
// RawQk{4 heads e, 4 heads e, silu}); refused otherwise.
cudaError_t TnlGatesChunkCumsum(const void* proj, const PackView& pack, int heads, int e, int dk,
                                const float* theta, const int64_t* positions,
                                const float* log_decay, DecayLayout g_layout, void* q, void* k,
                                float* g, void* v, Act qkv_act, cudaStream_t stream);

// Hgrn2Gates (kernels.h) over every chunk of the pack, with g chunk-cumulative (summed row by
// row from the chunk's first row, the floats the unfused cumsum gives). qfi is [rows,
// 3 dim]; q, k, g, v are [rows, dim]. One block per (chunk, 128 channels): row groups load
// and compute the gates, one sums the log gates down the rows. qfi is held
// as `qkv_act` too (bf16: the projection GEMM's output rounded, as fla's). v is i copied
// as it is. q and v null together: neither is read nor written (the chunk kernels read v
// in place from qfi, v_ld 3 dim, and q raw, taking its SiLU; refused otherwise).
cudaError_t Hgrn2GatesChunkCumsum(const void* qfi, const PackView& pack, int dim,
                                  const float* lower_bound, void* q, void* k, float* g, void* v,
                                  Act qkv_act, cudaStream_t stream);

// AddBias on gk (gk_proj.1's bias) then GlaGates (kernels.h), with g chunk-cumulative,
// over every chunk of the pack: gk is only read (the bias is added in registers). One
// block per (chunk, head). proj is held as `proj_act` (bf16 only with bf16 q, k, v: the
// projection GEMM's output rounded, as fla's); v null: not written (the chunk kernels read
// it in place from proj, v_ld proj_ld). q and k null together: not written (the chunk
// kernels read them in place as they are, RawQk{proj_ld, proj_ld}); one alone is refused.
cudaError_t GlaGatesChunkCumsum(const void* proj, Act proj_act, int64_t proj_ld, int64_t k_off,
                                int64_t v_off, const float* gk, const float* gk_bias,
                                const PackView& pack, int heads, int kv_heads, int dk, int dv,
                                float normalizer, bool has_clamp, float clamp_min, void* q, void* k,
                                float* g, void* v, Act qkv_act, cudaStream_t stream);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_KERNELS_FUSED_GATES_H_
