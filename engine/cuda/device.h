// Device basics for the CUDA backend: error conversion, a caching pool of plain
// cudaMalloc blocks, owned buffers, and a per-model context (device, stream, cuBLAS).
#ifndef HGEVAL_ENGINE_CUDA_DEVICE_H_
#define HGEVAL_ENGINE_CUDA_DEVICE_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/util/memory_budget.h"

namespace hgeval::cuda {

absl::Status CudaStatus(cudaError_t err, const char* what);
absl::Status CublasStatus(cublasStatus_t st, const char* what);

#define HG_CUDA_RETURN(expr)                                                                 \
  do {                                                                                       \
    const cudaError_t hg_cuda_err_ = (expr);                                                 \
    if (hg_cuda_err_ != cudaSuccess) return ::hgeval::cuda::CudaStatus(hg_cuda_err_, #expr); \
  } while (0)

#define HG_CUBLAS_RETURN(expr)                                   \
  do {                                                           \
    const cublasStatus_t hg_cublas_st_ = (expr);                 \
    if (hg_cublas_st_ != CUBLAS_STATUS_SUCCESS)                  \
      return ::hgeval::cuda::CublasStatus(hg_cublas_st_, #expr); \
  } while (0)

// Copies host memory to the device and returns once the data is there. A plain
// cudaMemcpy from pageable memory may return when the data is staged, before it lands,
// and it runs on the legacy stream, which the contexts' non-blocking streams do not wait
// for: a kernel launched next on a context's stream could read the old contents.
absl::Status CopyToDevice(void* dst, const void* src, size_t bytes);

// The device-memory budget of GPU `device`, shared by every model on it (weights, states,
// scratch and the pools' cached blocks). Created on first use with what the GPU has free
// then, less a margin for the CUDA context, cuBLAS and graphs.
MemoryBudget& DeviceMemoryBudget(int device);
// Sets that budget from --device_memory: bytes with a unit ("20GiB"), a fraction of the
// GPU's memory ("0.5") or a percentage; "" / "auto" keeps the default. Refused when more
// than the GPU has.
absl::Status SetDeviceMemoryLimit(int device, std::string_view spec);

// Caches freed blocks by rounded size, so states and scratch are recycled without
// cudaMalloc/cudaFree on the hot path. Thread-safe. Tracks bytes held and the peak.
// New blocks come from the device's stream-ordered pool, which keeps the memory of blocks
// given back mapped (up to the budget's limit) for blocks of other sizes.
// Every block it takes from the driver is charged to the device's budget first (cached
// blocks stay charged until Trim gives them back), so an allocation over the budget is
// refused with RESOURCE_EXHAUSTED before cudaMalloc is asked.
class DevicePool {
 public:
  explicit DevicePool(int device);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  absl::StatusOr<void*> Allocate(size_t bytes);
  void Free(void* ptr);
  // Returns cached blocks to the driver.
  void Trim();
  // Returns the longest-cached blocks to the driver until the budget has `bytes` free (at
  // least a sixteenth of its limit, so that give-backs, each a device synchronisation,
  // stay rare), keeping the rest for reuse; nothing where no block is cached.
  void GiveBackFor(size_t bytes);
  size_t bytes_in_use() const;
  size_t peak_bytes_in_use() const;
  void ResetPeak();
  MemoryBudget* budget() const { return budget_; }
  // The size a request of `bytes` takes from the pool (and the budget).
  static size_t RoundSize(size_t bytes);

 private:
  // Frees `blocks` (size, pointer) to the driver after the device's queued work.
  void FreeToDriver(const std::vector<std::pair<size_t, void*>>& blocks);
  // A block from the driver (through mem_pool_ where there is one), and back.
  cudaError_t DriverMalloc(void** ptr, size_t size);
  void DriverFree(void* ptr);

  int device_;
  MemoryBudget* budget_;
  cudaMemPool_t mem_pool_ = nullptr;  // the device's pool, keeping freed memory mapped

  struct CachedBlock {
    uint64_t stamp;  // when it was cached (key of lru_)
    void* ptr;
  };
  mutable std::mutex mu_;
  std::multimap<size_t, CachedBlock> free_;                               // rounded size -> block
  std::map<uint64_t, std::multimap<size_t, CachedBlock>::iterator> lru_;  // oldest first
  uint64_t next_stamp_ = 0;
  size_t cached_ = 0;  // bytes in free_
  std::map<void*, size_t> live_;
  size_t in_use_ = 0;
  size_t peak_ = 0;
};

// An owned allocation from a pool (or empty).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  static absl::StatusOr<DeviceBuffer> Make(DevicePool* pool, size_t bytes);
  void Reset();
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return bytes_; }

 private:
  DevicePool* pool_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Sets the calling thread's device for the scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();

 private:
  int previous_ = 0;
};

// Number of visible CUDA devices; 0 (not an error) without a driver or GPU.
int VisibleDeviceCount();

// Per-model device context: one stream, one cuBLAS handle bound to it with a fixed
// workspace (so cuBLAS calls can be captured into graphs), and the pool.
class DeviceContext {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceContext>> Create(int device);
  ~DeviceContext();
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  cublasHandle_t cublas() const { return cublas_; }
  DevicePool* pool() { return pool_.get(); }
  std::string name() const { return name_; }

 private:
  DeviceContext() = default;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::unique_ptr<DevicePool> pool_;
  DeviceBuffer workspace_;
  std::string name_;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_DEVICE_H_
