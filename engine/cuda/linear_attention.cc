#include "engine/cuda/linear_attention.h"

#include <algorithm>

#include "engine/cuda/kernels_chunk_mma.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {

absl::Status CudaLinearAttention::Allocate(DeviceAllocator& alloc,
                                           std::initializer_list<int64_t> call_dks,
                                           bool pack_values, bool pack_queries) {
  // Sized in bytes for what the packs hold: bf16 q, k, v and bf16 chunk states where the
  // tensor-core kernels run (half the fp32 room), fp32 where the fp32 kernels do, for every
  // key dim a call may use; decode steps hold kDecodeRows fp32 rows.
  const int64_t R = kPackRows, H = heads_;
  size_t qq = kDecodeRows * H * dk_ * sizeof(float), kk = qq;
  size_t vv = kDecodeRows * H * dv_ * sizeof(float);
  chunk_bytes_ = 0;
  auto fit = [&](int64_t call_dk) {
    const size_t size = ActSize(PackOperandsAct(call_dk));
    kk = std::max(kk, static_cast<size_t>(R * H * call_dk) * size);
    if (pack_queries) qq = std::max(qq, static_cast<size_t>(R * H * call_dk) * size);
    if (pack_values) vv = std::max(vv, static_cast<size_t>(R * H * dv_) * size);
    chunk_bytes_ = std::max(chunk_bytes_, static_cast<int64_t>(H * call_dk * dv_ * size));
  };
  fit(dk_);
  for (int64_t call_dk : call_dks) fit(call_dk);
  q_bytes_ = qq;
  k_bytes_ = kk;
  v_bytes_ = vv;
  HG_ASSIGN_OR_RETURN(q_, alloc.Alloc(qq));
  HG_ASSIGN_OR_RETURN(k_, alloc.Alloc(kk));
  HG_RETURN_IF_ERROR(alloc.Floats(&g_, static_cast<size_t>(R * H * dk_)));
  HG_ASSIGN_OR_RETURN(v_, alloc.Alloc(vv));
  max_pack_chunks_ = std::max<int64_t>(R / kGlaChunk, kChunkStateBudget / chunk_bytes_);
  pool_ = alloc.pool();
  reserved_chunks_ = R / kGlaChunk;
  HG_ASSIGN_OR_RETURN(chunk_states_,
                      alloc.Alloc(static_cast<size_t>(reserved_chunks_ * chunk_bytes_)));
  return absl::OkStatus();
}

bool CudaLinearAttention::HoldsPack(int rows, int64_t call_dk, bool own_queries,
                                    bool own_values) const {
  const size_t size = ActSize(PackOperandsAct(call_dk));
  const size_t qk = static_cast<size_t>(rows * heads_ * call_dk) * size;
  return qk <= k_bytes_ && (!own_queries || qk <= q_bytes_) &&
         (!own_values || static_cast<size_t>(rows * heads_ * dv_) * size <= v_bytes_) &&
         heads_ * call_dk * dv_ * static_cast<int64_t>(size) <= chunk_bytes_;
}

absl::StatusOr<int64_t> CudaLinearAttention::ReserveChunks(int64_t chunks) {
  chunks = std::min(chunks, max_pack_chunks_);
  if (chunks <= reserved_chunks_) return reserved_chunks_;
  const int64_t want = std::min(max_pack_chunks_,
                                (chunks + kChunkStateStep - 1) / kChunkStateStep * kChunkStateStep);
  // The new room is taken before the old is given back, so a refusal keeps what was held.
  absl::StatusOr<DeviceBuffer> room =
      DeviceBuffer::Make(pool_, static_cast<size_t>(want * chunk_bytes_));
  if (!room.ok()) {
    if (absl::IsResourceExhausted(room.status())) return reserved_chunks_;
    return room.status();
  }
  chunk_states_ = *std::move(room);
  reserved_chunks_ = want;
  return reserved_chunks_;
}

Act CudaLinearAttention::PackOperandsAct(int64_t call_dk) const {
  if (call_dk <= 0) call_dk = dk_;
  const bool bf16 =
      tensor_cores_ && ChunkMmaTakesBf16Values(static_cast<int>(call_dk), static_cast<int>(dv_));
  return bf16 ? Act::kBF16 : Act::kF32;
}

Act CudaLinearAttention::OutputAct(const MixerPass& pass, int64_t call_dk) const {
  return pass.decode ? Act::kF32 : PackOperandsAct(call_dk);
}

absl::Status CudaLinearAttention::Enqueue(const MixerPass& pass, int64_t state_offset, void* o,
                                          int64_t call_dk, bool g_chunk_cumulative,
                                          DecayLayout g_layout, PackValues values,
                                          PackRawQk raw) const {
  if (call_dk <= 0) call_dk = dk_;
  if (call_dk > dk_) return absl::InternalError("call_dk exceeds the attention's key dim");
  if (!pass.decode && g_layout == DecayLayout::kPerHead &&
      (!g_chunk_cumulative || !PackTakesHeadDecay(call_dk))) {
    return absl::InternalError("a per-head g needs the tensor-core kernels and a cumulative g");
  }
  if (!pass.decode && StateChunks(*pass.pack) > reserved_chunks_) {
    return absl::InternalError("a pack holds more chunks than its chunk states have room for");
  }
  const bool own_values = values.v == nullptr, own_queries = raw.q == nullptr;
  if (!pass.decode && !HoldsPack(pass.rows, call_dk, own_queries, own_values)) {
    return absl::InternalError("a pack's q, k, v or chunk states exceed their room");
  }
  if ((!own_values || !own_queries) &&
      (pass.decode || !tensor_cores_ || PackOperandsAct(call_dk) != Act::kBF16)) {
    return absl::InternalError("v, q or k read in place needs a pack on the tensor-core kernels");
  }
  if (raw.k != nullptr && own_queries) return absl::InternalError("k read in place needs q too");
  const void* pack_v = own_values ? v() : values.v;
  const void* pack_q = own_queries ? q() : raw.q;
  const void* pack_k = raw.k == nullptr ? k() : raw.k;
  const RawQk raw_qk{own_queries ? 0 : raw.ld, raw.k == nullptr ? 0 : raw.ld, raw.silu};
  const int H = static_cast<int>(heads_), dk = static_cast<int>(call_dk),
            dv = static_cast<int>(dv_);
  float* const* sptrs = pass.in->state_ptrs;
  float* const* optrs = pass.in->out_ptrs;  // null: states are written back in place
  cudaStream_t s = pass.stream;
  if (pass.decode) {
    if (o == nullptr) return absl::InternalError("a decode step needs its output");
    HG_CUDA_RETURN(RecurrentGlaStep(q(), k(), g(), v(), pass.rows, H, dk, dv, scale_, sptrs,
                                    state_offset, static_cast<float*>(o), s));
    return absl::OkStatus();
  }
  if (!g_chunk_cumulative) HG_CUDA_RETURN(ChunkLocalCumsumPacked(g(), *pass.pack, H, dk, s));
  if (tensor_cores_) {
    const Act qkv_act = PackOperandsAct(call_dk);
    HG_CUDA_RETURN(ChunkGlaStatesPackedMma(pack_k, g(), g_layout, pack_v, qkv_act, *pass.pack, H,
                                           dk, dv, sptrs, optrs, state_offset,
                                           chunk_states_.as<float>(), s, values.ld, raw_qk));
    if (o == nullptr) return absl::OkStatus();
    HG_CUDA_RETURN(ChunkGlaOutputPackedMma(
        pack_q, pack_k, g(), g_layout, pack_v, qkv_act, chunk_states_.as<float>(), sptrs, optrs,
        state_offset, *pass.pack, H, dk, dv, scale_, o, s, qkv_act, values.ld, raw_qk));
    return absl::OkStatus();
  }
  HG_CUDA_RETURN(ChunkGlaStatesPacked(k(), g(), v(), *pass.pack, H, dk, dv, sptrs, optrs,
                                      state_offset, chunk_states_.as<float>(), s));
  if (o == nullptr) return absl::OkStatus();
  HG_CUDA_RETURN(ChunkGlaOutputPacked(q(), k(), g(), v(), chunk_states_.as<float>(), sptrs, optrs,
                                      state_offset, *pass.pack, H, dk, dv, scale_,
                                      static_cast<float*>(o), s));
  return absl::OkStatus();
}

}  // namespace hgeval::cuda
