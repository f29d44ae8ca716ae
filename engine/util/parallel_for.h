// Runs fn(i) for i in [0, n) on the host's cores, in fixed slices handed out in order.
// For pure per-item work (tokenizing requests): each fn(i) must touch only item i's
// output, so the results do not depend on scheduling.
#ifndef HGEVAL_ENGINE_UTIL_PARALLEL_FOR_H_
#define HGEVAL_ENGINE_UTIL_PARALLEL_FOR_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace hgeval {

template <typename Fn>
void ParallelFor(size_t n, Fn&& fn, size_t slice = 256) {
  const size_t slices = (n + slice - 1) / slice;
  const size_t workers =
      std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), slices);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t s = next.fetch_add(slice); s < n; s = next.fetch_add(slice)) {
      for (size_t i = s; i < std::min(n, s + slice); ++i) fn(i);
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_UTIL_PARALLEL_FOR_H_
