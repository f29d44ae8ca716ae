#include "engine/cuda/kv_lineage.h"

#include <algorithm>
#include <atomic>

namespace hgeval::cuda {
namespace {

uint64_t NewOwner() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

KvLineage KvLineage::Fresh() {
  KvLineage lineage;
  lineage.segments_.push_back({NewOwner(), kOpen});
  return lineage;
}

KvLineage KvLineage::ForkAt(int64_t position) const {
  KvLineage fork;
  int64_t start = 0;
  for (const KvSegment& s : segments_) {
    if (start >= position) break;
    fork.segments_.push_back({s.owner, std::min(s.end, position)});
    start = s.end;
  }
  fork.segments_.push_back({NewOwner(), kOpen});
  return fork;
}

uint64_t KvLineage::PrefixOwner(int64_t x) const {
  for (const KvSegment& s : segments_) {
    if (s.end >= x) return s.owner;
  }
  return 0;
}

}  // namespace hgeval::cuda
