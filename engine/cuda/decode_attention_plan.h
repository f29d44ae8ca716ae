// Pass 1 of the decode attention (kernels.h's DecodeAttention) as a list of work items.
//
// A row's keys are cut into windows of kDecodeWindowKeys at fixed positions (window k is
// keys [k W, (k + 1) W) ∩ [0, keys)), and its result is the windows' partial softmax
// states merged in window order, so a row's arithmetic depends on its own key count
// alone. An item is one window of up to kDecodeShareRows rows: a full window that several
// rows' caches hold bit for bit the same (the same KvLineage::PrefixOwner at its end:
// forks of one snapshot, the NIAH grid's cells) is read once for all of them; any other
// window is an item of one row. Each row of an item computes exactly what it would
// alone, so which rows share an item changes the bytes read, never a result.
#ifndef HGEVAL_ENGINE_CUDA_DECODE_ATTENTION_PLAN_H_
#define HGEVAL_ENGINE_CUDA_DECODE_ATTENTION_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "engine/cuda/kv_lineage.h"

#ifdef __CUDACC__
#define HG_DECODE_PLAN_HD __host__ __device__ __forceinline__
#else
#define HG_DECODE_PLAN_HD inline
#endif

namespace hgeval::cuda {

constexpr int kDecodeWindowKeys = 256;
// The most rows an item holds: one m16 tile of the tensor-core kernel (bf16); the
// CUDA-core kernels take fewer (kernels.h's DecodeAttentionShareRows).
constexpr int kDecodeShareRows = 16;

// Windows of a row of `keys` keys (the kernels count them the same way).
HG_DECODE_PLAN_HD int64_t DecodeWindows(int64_t keys) {
  return (keys + kDecodeWindowKeys - 1) / kDecodeWindowKeys;
}

// One block's work: window `window` of the step rows rows[0 .. count). The keys are read
// from rows[0]'s cache (the others hold the same bytes there).
struct DecodeAttentionItem {
  int32_t window = 0;
  int32_t count = 0;
  int8_t rows[kDecodeShareRows] = {};
};
static_assert(sizeof(DecodeAttentionItem) == 24);

// What the device reads: the counts, then the items (those of several rows first: they
// run in a kernel of their own, decode_attention_plan.h's two kernels of pass 1).
struct DecodeAttentionPlanHeader {
  int32_t items = 0;
  int32_t shared_items = 0;  // items [0, shared_items) have count > 1
  int32_t pad[2] = {};
};
static_assert(sizeof(DecodeAttentionPlanHeader) == 16);

struct DecodeAttentionRow {
  int row = 0;                         // the step's row (< 128)
  int64_t keys = 0;                    // positions [0, keys) of its cache
  const KvLineage* lineage = nullptr;  // null: shares nothing
};

// Items covering every window of every row exactly once; full windows with one prefix
// owner go to items of up to `max_share` rows (1: no sharing). Those items come first,
// then the rows' own, each group in window order.
void PlanDecodeAttention(absl::Span<const DecodeAttentionRow> rows, int max_share,
                         std::vector<DecodeAttentionItem>* items);

// Bytes of a plan's device image of `items` items, and the image itself (header, then
// the items) written to `out`.
size_t DecodeAttentionPlanBytes(size_t items);
void WriteDecodeAttentionPlan(absl::Span<const DecodeAttentionItem> items, void* out);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_DECODE_ATTENTION_PLAN_H_
