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

// The counters, named once: as plain values in a snapshot (CudaHostCounts) and as atomics
// in the process-wide counters (CudaHostCounters). ForEach visits each field beside the
// same-named field of another set, so no other code lists them.
template <typename T>
struct HostCountFields {
  T pool_hits{};       // allocations served from a pool's cached blocks
  T driver_mallocs{};  // blocks taken from the driver
  T driver_frees{};    // blocks given back to it
  T give_backs{};      // give-backs (each synchronises the device first)
  T malloc_ns{};       // in cudaMalloc
  T free_ns{};         // in give-backs: the synchronisation and cudaFree
  T fork_copies{};     // KV caches copied for read-only forks inside Forward
  T fork_copy_bytes{};
  T fork_ns{};  // Forward's host time resolving those forks (rooms + copies)

  template <typename U, typename F>
  void ForEach(const HostCountFields<U>& other, F&& f) {
    f(pool_hits, other.pool_hits);
    f(driver_mallocs, other.driver_mallocs);
    f(driver_frees, other.driver_frees);
    f(give_backs, other.give_backs);
    f(malloc_ns, other.malloc_ns);
    f(free_ns, other.free_ns);
    f(fork_copies, other.fork_copies);
    f(fork_copy_bytes, other.fork_copy_bytes);
    f(fork_ns, other.fork_ns);
  }
};

struct CudaHostCounts : HostCountFields<int64_t> {
  double malloc_seconds() const { return static_cast<double>(malloc_ns) * 1e-9; }
  double free_seconds() const { return static_cast<double>(free_ns) * 1e-9; }
  double fork_seconds() const { return static_cast<double>(fork_ns) * 1e-9; }

  CudaHostCounts operator-(const CudaHostCounts& o) const {
    CudaHostCounts d = *this;
    d.ForEach(o, [](int64_t& x, int64_t y) { x -= y; });
    return d;
  }
};

class CudaHostCounters : public HostCountFields<std::atomic<int64_t>> {
 public:
  static CudaHostCounters& Get() {
    static CudaHostCounters counters;
    return counters;
  }
  CudaHostCounts Snapshot() const {
    CudaHostCounts s;
    s.ForEach(*this, [](int64_t& x, const std::atomic<int64_t>& y) { x = y.load(); });
    return s;
  }
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
