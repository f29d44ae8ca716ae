// Process-wide counters of the CUDA backend's host-side work that is neither a kernel nor
// a Forward's own bookkeeping: the pools' traffic with the driver (cudaMalloc, cudaFree
// and the device synchronisations before a give-back) and the KV-cache copies a Forward
// makes for items continuing from a read-only start. The benchmarks read them to say
// where a call's wall time goes; nothing in the engine decides by them.
#ifndef HGEVAL_ENGINE_CUDA_HOST_COUNTERS_H_
#define HGEVAL_ENGINE_CUDA_HOST_COUNTERS_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hgeval::cuda {

struct CudaHostCounts {
  int64_t pool_hits = 0;       // allocations served from a pool's cached blocks
  int64_t driver_mallocs = 0;  // blocks taken from the driver
  int64_t driver_frees = 0;    // blocks given back to it
  int64_t give_backs = 0;      // give-backs (each synchronises the device first)
  double malloc_seconds = 0;   // in cudaMalloc
  double free_seconds = 0;     // in give-backs: the synchronisation and cudaFree
  int64_t fork_copies = 0;     // KV caches copied for read-only forks inside Forward
  int64_t fork_copy_bytes = 0;
  double fork_seconds = 0;  // Forward's host time resolving those forks (rooms + copies)

  CudaHostCounts operator-(const CudaHostCounts& o) const {
    return {pool_hits - o.pool_hits,           driver_mallocs - o.driver_mallocs,
            driver_frees - o.driver_frees,     give_backs - o.give_backs,
            malloc_seconds - o.malloc_seconds, free_seconds - o.free_seconds,
            fork_copies - o.fork_copies,       fork_copy_bytes - o.fork_copy_bytes,
            fork_seconds - o.fork_seconds};
  }
};

class CudaHostCounters {
 public:
  static CudaHostCounters& Get() {
    static CudaHostCounters counters;
    return counters;
  }
  CudaHostCounts Snapshot() const {
    auto s = [](const std::atomic<int64_t>& ns) { return ns.load() * 1e-9; };
    return {pool_hits.load(),   driver_mallocs.load(),  driver_frees.load(),
            give_backs.load(),  s(malloc_ns),           s(free_ns),
            fork_copies.load(), fork_copy_bytes.load(), s(fork_ns)};
  }

  std::atomic<int64_t> pool_hits{0}, driver_mallocs{0}, driver_frees{0}, give_backs{0};
  std::atomic<int64_t> malloc_ns{0}, free_ns{0};
  std::atomic<int64_t> fork_copies{0}, fork_copy_bytes{0}, fork_ns{0};
};

// Adds the wall time of its scope, in nanoseconds, to a counter.
class ScopedNanos {
 public:
  explicit ScopedNanos(std::atomic<int64_t>* ns)
      : ns_(ns), start_(std::chrono::steady_clock::now()) {}
  ~ScopedNanos() {
    ns_->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start_)
                       .count(),
                   std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t>* ns_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_HOST_COUNTERS_H_
