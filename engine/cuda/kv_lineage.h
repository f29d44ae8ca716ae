// Where a KV cache's positions came from, so that a decode step can read the keys that
// several caches hold bit for bit the same once for all of them (DecodeAttention's shared
// windows; decode_attention_plan.h).
//
// A cache's positions are written once each, in order (a step appends; a cache that
// grows is copied whole), and a fork copies its parent's positions [0, p). So a cache is
// a list of segments: positions [previous end, end) are the ones its ancestor `owner`
// wrote. Two caches hold the same bytes at positions [0, x) when the segment holding
// position x - 1 has the same owner in both: an owner's id is never reused, and the
// segments before its own are fixed when it is made, so they are the same in both too.
// Host-only bookkeeping: a lineage never touches the device.
#ifndef HGEVAL_ENGINE_CUDA_KV_LINEAGE_H_
#define HGEVAL_ENGINE_CUDA_KV_LINEAGE_H_

#include <cstdint>
#include <limits>
#include <vector>

namespace hgeval::cuda {

struct KvSegment {
  uint64_t owner = 0;
  int64_t end = 0;  // positions [previous segment's end, end); the last one is open
};

class KvLineage {
 public:
  static constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();

  // A new cache: one open segment of an owner never seen before.
  static KvLineage Fresh();
  // A fork at `position`: this lineage's positions [0, position), then the fork's own.
  KvLineage ForkAt(int64_t position) const;
  // The owner of the segment holding position x - 1 (x >= 1): caches with the same owner
  // here hold the same bytes at [0, x). 0 for an empty lineage (a cache that shares nothing).
  uint64_t PrefixOwner(int64_t x) const;

  const std::vector<KvSegment>& segments() const { return segments_; }

 private:
  std::vector<KvSegment> segments_;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_KV_LINEAGE_H_
