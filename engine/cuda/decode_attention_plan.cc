#include "engine/cuda/decode_attention_plan.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace hgeval::cuda {

void PlanDecodeAttention(absl::Span<const DecodeAttentionRow> rows, int max_share,
                         std::vector<DecodeAttentionItem>* items) {
  items->clear();
  max_share = std::clamp(max_share, 1, kDecodeShareRows);
  int64_t max_windows = 0;
  for (const DecodeAttentionRow& r : rows) {
    max_windows = std::max(max_windows, DecodeWindows(r.keys));
  }
  std::vector<DecodeAttentionItem> singles;
  auto single = [&](int row, int64_t window) {
    DecodeAttentionItem item;
    item.window = static_cast<int32_t>(window);
    item.count = 1;
    item.rows[0] = static_cast<int8_t>(row);
    singles.push_back(item);
  };
  // (prefix owner, row) of the rows whose window k is full and shareable.
  std::vector<std::pair<uint64_t, int>> sharers;
  // Each row's segment holding the current window's last key (ends ascend with k): the
  // walk costs a row's segments once, not once per window.
  std::vector<size_t> segment(rows.size(), 0);
  for (int64_t k = 0; k < max_windows; ++k) {
    const int64_t end = (k + 1) * kDecodeWindowKeys;
    sharers.clear();
    for (size_t i = 0; i < rows.size(); ++i) {
      const DecodeAttentionRow& r = rows[i];
      if (k >= DecodeWindows(r.keys)) continue;
      uint64_t owner = 0;
      if (r.lineage != nullptr && end <= r.keys && max_share > 1) {
        const std::vector<KvSegment>& segments = r.lineage->segments();
        while (segment[i] < segments.size() && segments[segment[i]].end < end) ++segment[i];
        if (segment[i] < segments.size()) owner = segments[segment[i]].owner;
      }
      if (owner == 0) {
        single(r.row, k);
      } else {
        sharers.push_back({owner, r.row});
      }
    }
    std::stable_sort(sharers.begin(), sharers.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < sharers.size();) {
      DecodeAttentionItem item;
      item.window = static_cast<int32_t>(k);
      while (i < sharers.size() && item.count < max_share &&
             (item.count == 0 || sharers[i].first == sharers[i - 1].first)) {
        item.rows[item.count++] = static_cast<int8_t>(sharers[i].second);
        ++i;
      }
      // A window only one row holds is that row's own after all.
      if (item.count == 1) {
        singles.push_back(item);
      } else {
        items->push_back(item);
      }
    }
  }
  items->insert(items->end(), singles.begin(), singles.end());
}

size_t DecodeAttentionPlanBytes(size_t items) {
  return sizeof(DecodeAttentionPlanHeader) + items * sizeof(DecodeAttentionItem);
}

void WriteDecodeAttentionPlan(absl::Span<const DecodeAttentionItem> items, void* out) {
  DecodeAttentionPlanHeader header;
  header.items = static_cast<int32_t>(items.size());
  while (header.shared_items < header.items && items[header.shared_items].count > 1) {
    ++header.shared_items;
  }
  std::memcpy(out, &header, sizeof(header));
  if (!items.empty()) {
    std::memcpy(static_cast<char*>(out) + sizeof(header), items.data(),
                items.size() * sizeof(DecodeAttentionItem));
  }
}

}  // namespace hgeval::cuda
