// The GPU a `--device cuda[:N]` string names, checked against the visible devices.
#ifndef HGEVAL_ENGINE_CUDA_DEVICE_SELECT_H_
#define HGEVAL_ENGINE_CUDA_DEVICE_SELECT_H_

#include <string>

#include "absl/status/statusor.h"

namespace hgeval::cuda {

// "cuda" is device 0, "cuda:N" device N. InvalidArgument for another spelling;
// FailedPrecondition (saying to use --device cpu) when no GPU is visible or N is not one.
absl::StatusOr<int> SelectCudaDevice(const std::string& device);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_DEVICE_SELECT_H_
