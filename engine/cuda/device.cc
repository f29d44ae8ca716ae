#include "engine/cuda/device.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/cuda/env_switch.h"
#include "engine/cuda/host_counters.h"

namespace hgeval::cuda {

absl::Status CudaStatus(cudaError_t err, const char* what) {
  return absl::InternalError(absl::StrCat("CUDA error in ", what, ": ", cudaGetErrorString(err)));
}

absl::Status CublasStatus(cublasStatus_t st, const char* what) {
  return absl::InternalError(
      absl::StrCat("cuBLAS error in ", what, ": ", cublasGetStatusString(st)));
}

absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (cudaError_t err = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice); err != cudaSuccess) {
    return CudaStatus(err, "cudaMemcpy to device");
  }
  if (cudaError_t err = cudaStreamSynchronize(cudaStreamLegacy); err != cudaSuccess) {
    return CudaStatus(err, "waiting for a copy to the device");
  }
  return absl::OkStatus();
}

MemoryBudget& DeviceMemoryBudget(int device) {
  static std::mutex mu;
  static std::map<int, MemoryBudget*>* budgets = new std::map<int, MemoryBudget*>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = budgets->find(device);
  if (it != budgets->end()) return *it->second;
  size_t free_bytes = 0, total_bytes = 0;
  {
    DeviceGuard guard(device);
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
      cudaGetLastError();
      free_bytes = total_bytes = 0;
    }
  }
  // The context, cuBLAS's own allocations and graph instantiation live outside the pools.
  const size_t margin = std::max<size_t>(size_t{1} << 30, total_bytes / 50);
  const size_t limit = free_bytes > margin ? free_bytes - margin : free_bytes / 2;
  auto* budget = new MemoryBudget(absl::StrCat("cuda:", device, " device memory"), limit);
  budgets->emplace(device, budget);
  return *budget;
}

absl::Status SetDeviceMemoryLimit(int device, std::string_view spec) {
  size_t free_bytes = 0, total_bytes = 0;
  {
    DeviceGuard guard(device);
    HG_CUDA_RETURN(cudaMemGetInfo(&free_bytes, &total_bytes));
  }
  absl::StatusOr<size_t> limit = ParseMemorySize(spec, total_bytes);
  if (!limit.ok()) return limit.status();
  MemoryBudget& budget = DeviceMemoryBudget(device);
  if (*limit == 0) return absl::OkStatus();
  if (*limit > total_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("--device_memory ", FormatBytes(*limit),
                                                   " is more than cuda:", device, " has (",
                                                   FormatBytes(total_bytes), ")"));
  }
  budget.SetLimit(*limit);
  return absl::OkStatus();
}

namespace {

// The device's stream-ordered memory pool, set to keep what is freed into it mapped up to
// the budget's limit (its release threshold): a block of a size the pool has not cached is
// then carved from memory given back before instead of mapped anew by cudaMalloc (≈ 90 µs
// for a 12 MiB KV-cache room on an H100, and as much again to cudaFree it: docs/cuda.md,
// performance log entry 22). Null where the device has no memory pools, or with
// HGEVAL_CUDA_POOL_DRIVER=malloc (plain cudaMalloc and cudaFree; measurement).
cudaMemPool_t RetainingMemPool(int device, size_t limit) {
  if (EnvIs("HGEVAL_CUDA_POOL_DRIVER", "malloc")) return nullptr;
  int supported = 0;
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess ||
      supported == 0 || cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  uint64_t threshold = limit > 0 ? limit : UINT64_MAX;
  if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return pool;
}

}  // namespace

DevicePool::DevicePool(int device) : device_(device), budget_(&DeviceMemoryBudget(device)) {
  {
    DeviceGuard guard(device_);
    mem_pool_ = RetainingMemPool(device_, budget_->limit());
  }
  budget_->AddReclaimer(
      this, [this] { Trim(); },
      [this] {
        std::lock_guard<std::mutex> lock(mu_);
        return cached_;
      });
}

DevicePool::~DevicePool() {
  budget_->RemoveReclaimer(this);
  DeviceGuard guard(device_);
  Trim();
  std::lock_guard<std::mutex> lock(mu_);
  if (mem_pool_ != nullptr && !live_.empty()) cudaDeviceSynchronize();  // as cudaFree does
  for (auto& [ptr, size] : live_) {
    DriverFree(ptr);
    budget_->Release(size);
  }
  if (mem_pool_ != nullptr) {
    // What the device's pool keeps mapped goes back to the driver with the last model.
    cudaStreamSynchronize(cudaStreamLegacy);
    cudaMemPoolTrimTo(mem_pool_, 0);
  }
}

cudaError_t DevicePool::DriverMalloc(void** ptr, size_t size) {
  if (mem_pool_ == nullptr) return cudaMalloc(ptr, size);
  // Allocated in the legacy stream's order, then usable by every stream once it is done.
  cudaError_t err = cudaMallocFromPoolAsync(ptr, size, mem_pool_, cudaStreamLegacy);
  if (err == cudaSuccess) err = cudaStreamSynchronize(cudaStreamLegacy);
  return err;
}

void DevicePool::DriverFree(void* ptr) {
  if (mem_pool_ == nullptr) {
    cudaFree(ptr);
  } else {
    cudaFreeAsync(ptr, cudaStreamLegacy);  // the device has finished with it
  }
}

size_t DevicePool::RoundSize(size_t bytes) {
  if (bytes == 0) bytes = 1;
  constexpr size_t kSmall = 1 << 20;
  if (bytes <= kSmall) return (bytes + 511) & ~static_cast<size_t>(511);
  constexpr size_t kLarge = 2 << 20;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

namespace {

// HGEVAL_CUDA_POOL_GIVE_BACK=all: a block the budget has no room for makes every pool
// give all its cached blocks back (the behaviour before partial give-backs; measurement).
bool GiveBackAll() { return EnvIs("HGEVAL_CUDA_POOL_GIVE_BACK", "all"); }

}  // namespace

absl::StatusOr<void*> DevicePool::Allocate(size_t bytes) {
  const size_t size = RoundSize(bytes);
  CudaHostCounters& counters = CudaHostCounters::Get();
  void* ptr = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(size);
    if (it != free_.end()) {
      ptr = it->second.ptr;
      lru_.erase(it->second.stamp);
      free_.erase(it);
      cached_ -= size;
      live_[ptr] = size;
      in_use_ += size;
      if (in_use_ > peak_) peak_ = in_use_;
      counters.pool_hits.fetch_add(1, std::memory_order_relaxed);
      return ptr;
    }
  }
  // A new block: charged first, then taken from the driver. Where the budget has no room,
  // this pool gives back its longest-cached blocks first, so that the blocks the work in
  // progress keeps reusing stay (the budget would otherwise make every pool on the device
  // give all of them back). The pool's lock is not held here, since the budget calls back
  // into Trim.
  if (!GiveBackAll()) GiveBackFor(size);
  if (absl::Status s = budget_->Reserve(size, "a device allocation"); !s.ok()) return s;
  cudaError_t err;
  {
    DeviceGuard guard(device_);
    ScopedNanos timer(&counters.malloc_ns);
    counters.driver_mallocs.fetch_add(1, std::memory_order_relaxed);
    err = DriverMalloc(&ptr, size);
    if (err != cudaSuccess) {
      // Memory the budget does not see (another process, the context, what the device's
      // pool keeps mapped): give cached blocks back, unmap them, and retry once.
      cudaGetLastError();
      Trim();
      if (mem_pool_ != nullptr) {
        cudaStreamSynchronize(cudaStreamLegacy);
        cudaMemPoolTrimTo(mem_pool_, 0);
      }
      err = DriverMalloc(&ptr, size);
    }
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    budget_->Release(size);
    return absl::ResourceExhaustedError(
        absl::StrCat("cudaMalloc of ", FormatBytes(size), " failed: ", cudaGetErrorString(err),
                     " (the GPU holds memory the budget of ", FormatBytes(budget_->limit()),
                     " does not account; a smaller "
                     "--device_memory leaves room for it)"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  live_[ptr] = size;
  in_use_ += size;
  if (in_use_ > peak_) peak_ = in_use_;
  return ptr;
}

void DevicePool::Free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return;
  in_use_ -= it->second;
  cached_ += it->second;
  const uint64_t stamp = next_stamp_++;
  lru_.emplace(stamp, free_.emplace(it->second, CachedBlock{stamp, ptr}));
  live_.erase(it);
}

void DevicePool::Trim() {
  std::vector<std::pair<size_t, void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [size, block] : free_) blocks.emplace_back(size, block.ptr);
    free_.clear();
    lru_.clear();
    cached_ = 0;
  }
  FreeToDriver(blocks);
}

void DevicePool::GiveBackFor(size_t bytes) {
  const size_t limit = budget_->limit();
  if (limit == 0) return;
  const size_t available = budget_->available();
  if (available >= bytes) return;
  const size_t want = std::max(bytes - available, limit / 16);
  std::vector<std::pair<size_t, void*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t freed = 0;
    while (freed < want && !lru_.empty()) {
      auto it = lru_.begin()->second;
      blocks.emplace_back(it->first, it->second.ptr);
      freed += it->first;
      cached_ -= it->first;
      free_.erase(it);
      lru_.erase(lru_.begin());
    }
  }
  FreeToDriver(blocks);
}

void DevicePool::FreeToDriver(const std::vector<std::pair<size_t, void*>>& blocks) {
  if (blocks.empty()) return;
  CudaHostCounters& counters = CudaHostCounters::Get();
  ScopedNanos timer(&counters.free_ns);
  counters.give_backs.fetch_add(1, std::memory_order_relaxed);
  counters.driver_frees.fetch_add(static_cast<int64_t>(blocks.size()), std::memory_order_relaxed);
  DeviceGuard guard(device_);
  // Blocks may still be read by queued work on the model's stream: wait for the device.
  cudaDeviceSynchronize();
  for (const auto& [size, ptr] : blocks) {
    DriverFree(ptr);
    budget_->Release(size);
  }
}

size_t DevicePool::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t DevicePool::peak_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void DevicePool::ResetPeak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = in_use_;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    pool_ = other.pool_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.pool_ = nullptr;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

absl::StatusOr<DeviceBuffer> DeviceBuffer::Make(DevicePool* pool, size_t bytes) {
  DeviceBuffer buf;
  auto ptr = pool->Allocate(bytes);
  if (!ptr.ok()) return ptr.status();
  buf.pool_ = pool;
  buf.ptr_ = *ptr;
  buf.bytes_ = bytes;
  return buf;
}

void DeviceBuffer::Reset() {
  if (pool_ != nullptr && ptr_ != nullptr) pool_->Free(ptr_);
  pool_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

DeviceGuard::DeviceGuard(int device) {
  cudaGetDevice(&previous_);
  if (previous_ != device) cudaSetDevice(device);
}

DeviceGuard::~DeviceGuard() {
  int current = 0;
  cudaGetDevice(&current);
  if (current != previous_) cudaSetDevice(previous_);
}

int VisibleDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

absl::StatusOr<std::unique_ptr<DeviceContext>> DeviceContext::Create(int device) {
  std::unique_ptr<DeviceContext> ctx(new DeviceContext());
  ctx->device_ = device;
  HG_CUDA_RETURN(cudaSetDevice(device));
  cudaDeviceProp prop;
  HG_CUDA_RETURN(cudaGetDeviceProperties(&prop, device));
  ctx->name_ = prop.name;
  HG_CUDA_RETURN(cudaStreamCreateWithFlags(&ctx->stream_, cudaStreamNonBlocking));
  HG_CUBLAS_RETURN(cublasCreate(&ctx->cublas_));
  HG_CUBLAS_RETURN(cublasSetStream(ctx->cublas_, ctx->stream_));
  // Plain fp32 GEMMs stay fp32 (no TF32); bf16 GEMMs accumulate in fp32.
  HG_CUBLAS_RETURN(cublasSetMathMode(ctx->cublas_, CUBLAS_DEFAULT_MATH));
  ctx->pool_ = std::make_unique<DevicePool>(device);
  constexpr size_t kWorkspace = 32 << 20;
  auto ws = DeviceBuffer::Make(ctx->pool_.get(), kWorkspace);
  if (!ws.ok()) return ws.status();
  ctx->workspace_ = std::move(*ws);
  HG_CUBLAS_RETURN(cublasSetWorkspace(ctx->cublas_, ctx->workspace_.get(), kWorkspace));
  return ctx;
}

DeviceContext::~DeviceContext() {
  DeviceGuard guard(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (cublas_) cublasDestroy(cublas_);
  workspace_.Reset();
  pool_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

}  // namespace hgeval::cuda
