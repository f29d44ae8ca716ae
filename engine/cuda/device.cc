#include "engine/cuda/device.h"

#include "absl/strings/str_cat.h"

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

DevicePool::~DevicePool() {
  DeviceGuard guard(device_);
  Trim();
  for (auto& [ptr, size] : live_) cudaFree(ptr);
}

size_t DevicePool::RoundSize(size_t bytes) {
  if (bytes == 0) bytes = 1;
  constexpr size_t kSmall = 1 << 20;
  if (bytes <= kSmall) return (bytes + 511) & ~static_cast<size_t>(511);
  constexpr size_t kLarge = 2 << 20;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

absl::StatusOr<void*> DevicePool::Allocate(size_t bytes) {
  const size_t size = RoundSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_.find(size);
  void* ptr = nullptr;
  if (it != free_.end()) {
    ptr = it->second;
    free_.erase(it);
  } else {
    DeviceGuard guard(device_);
    cudaError_t err = cudaMalloc(&ptr, size);
    if (err != cudaSuccess) {
      // Give cached blocks back and retry once.
      cudaGetLastError();
      for (auto& [s, p] : free_) cudaFree(p);
      free_.clear();
      err = cudaMalloc(&ptr, size);
      if (err != cudaSuccess) {
        cudaGetLastError();
        return absl::ResourceExhaustedError(
            absl::StrCat("cudaMalloc of ", size, " bytes failed: ", cudaGetErrorString(err)));
      }
    }
  }
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
  free_.emplace(it->second, ptr);
  live_.erase(it);
}

void DevicePool::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceGuard guard(device_);
  for (auto& [s, p] : free_) cudaFree(p);
  free_.clear();
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
