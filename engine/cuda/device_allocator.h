// A CUDA model's device buffers from its pool: weights (uploaded from host tensors, fp32
// or in the activation dtype, counted as parameters) and scratch.
#ifndef HGEVAL_ENGINE_CUDA_DEVICE_ALLOCATOR_H_
#define HGEVAL_ENGINE_CUDA_DEVICE_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/cuda/device.h"
#include "engine/cuda/kernels.h"
#include "engine/loader/checkpoint.h"

namespace hgeval::cuda {

class DeviceAllocator {
 public:
  DeviceAllocator(DevicePool* pool, Act act) : pool_(pool), act_(act) {}

  Act act() const { return act_; }
  DevicePool* pool() const { return pool_; }
  // Parameters uploaded so far (UploadFloat, UploadAct).
  int64_t num_parameters() const { return num_parameters_; }
  void AddParameters(int64_t n) { num_parameters_ += n; }

  absl::StatusOr<DeviceBuffer> Alloc(size_t bytes);
  // Reallocates `buf` when it holds fewer than `bytes` (its contents are dropped).
  absl::Status Grow(DeviceBuffer* buf, size_t bytes);
  // Scratch of n fp32 values / n values of the activation dtype.
  absl::Status Floats(DeviceBuffer* out, size_t n);
  absl::Status Acts(DeviceBuffer* out, size_t n);

  // A weight kept in fp32 (norms, gates, biases), counted.
  absl::Status UploadFloat(const HostTensor& t, DeviceBuffer* out);
  // Values derived from the config or from other weights (not counted): fp32.
  absl::Status UploadDerived(const std::vector<float>& values, DeviceBuffer* out);
  // Weights in the activation dtype (bf16 rounds to nearest even), concatenated in order
  // into one buffer (a fused projection); counted unless `counted` is false.
  absl::Status UploadAct(const std::vector<const HostTensor*>& parts, DeviceBuffer* out,
                         bool counted = true);

 private:
  DevicePool* pool_;
  Act act_;
  int64_t num_parameters_ = 0;
};

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_DEVICE_ALLOCATOR_H_
