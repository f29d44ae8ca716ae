// Runs fn(i) for i in [0, n) on the process's worker pool (engine/util/worker_pool.h), in
// fixed slices. For pure per-item work (tokenizing requests): each fn(i) must touch only
// item i's output, so the results do not depend on scheduling.
#ifndef HGEVAL_ENGINE_UTIL_PARALLEL_FOR_H_
#define HGEVAL_ENGINE_UTIL_PARALLEL_FOR_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "engine/util/worker_pool.h"

namespace hgeval {

template <typename Fn>
void ParallelFor(size_t n, Fn&& fn, size_t slice = 256) {
  const size_t slices = (n + slice - 1) / slice;
  RunOnWorkerPool(static_cast<int64_t>(slices), [&](int64_t s) {
    const size_t begin = static_cast<size_t>(s) * slice;
    for (size_t i = begin; i < std::min(n, begin + slice); ++i) fn(i);
  });
}

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_UTIL_PARALLEL_FOR_H_
