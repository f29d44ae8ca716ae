// A byte budget for one pool of memory (a GPU's device memory, or the host's), shared by
// every model that lives in it: weights, sequence states and scratch are charged before
// they are allocated, so a workload that would not fit is refused (or made smaller by its
// caller) before memory or time is spent, instead of failing at the first allocation.
#ifndef HGEVAL_ENGINE_UTIL_MEMORY_BUDGET_H_
#define HGEVAL_ENGINE_UTIL_MEMORY_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hgeval {

class MemoryBudget {
 public:
  // `what` names the memory in messages ("cuda:0 device memory"); limit 0: unbounded.
  MemoryBudget(std::string what, size_t limit_bytes);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Charges `bytes`, or RESOURCE_EXHAUSTED naming the bytes asked for, those held and the
  // limit (nothing charged). Before refusing, asks the reclaimers to give back cached
  // memory.
  absl::Status Reserve(size_t bytes, std::string_view purpose);
  void Release(size_t bytes);

  // `reclaim` is called, without the budget's lock, when a reservation would not fit: it
  // frees memory that is held but unused (a pool's cached blocks), releasing it here;
  // `reclaimable` says how many bytes it would free.
  void AddReclaimer(const void* owner, std::function<void()> reclaim,
                    std::function<size_t()> reclaimable);
  void RemoveReclaimer(const void* owner);

  void SetLimit(size_t limit_bytes);
  size_t limit() const;  // 0: unbounded
  size_t held() const;
  size_t peak() const;
  void ResetPeak();
  // Bytes that can still be reserved (SIZE_MAX when unbounded), without / with what the
  // reclaimers would give back.
  size_t available() const;
  size_t obtainable() const;
  const std::string& what() const { return what_; }

 private:
  bool TryReserve(size_t bytes);

  const std::string what_;
  mutable std::mutex mu_;
  size_t limit_ = 0;
  size_t held_ = 0;
  size_t peak_ = 0;
  struct Reclaimer {
    const void* owner;
    std::function<void()> reclaim;
    std::function<size_t()> reclaimable;
  };
  std::vector<Reclaimer> reclaimers_;
};

// "20GiB", "512MiB", "8GB", "1.5G", "123456" (bytes), or a fraction of `total` ("0.8",
// "80%"): what --device_memory and --host_memory take. 0 / "" / "auto": 0 (the default).
absl::StatusOr<size_t> ParseMemorySize(std::string_view text, size_t total);

// "20.0 GiB": for messages.
std::string FormatBytes(size_t bytes);

// The host memory budget of this process (every CPU model's weights and states), created
// on first use unbounded; LoadOptions::host_memory sets its limit.
MemoryBudget& HostMemoryBudget();

// The host's available memory (MemAvailable of /proc/meminfo), 0 where unknown.
size_t HostAvailableBytes();

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_UTIL_MEMORY_BUDGET_H_
