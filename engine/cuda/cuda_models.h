// CUDA backend entry points (see docs/cuda.md).
#ifndef HGEVAL_ENGINE_CUDA_CUDA_MODELS_H_
#define HGEVAL_ENGINE_CUDA_CUDA_MODELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/config.h"
#include "engine/model/load_model.h"
#include "engine/model/model.h"

namespace hgeval::cuda {

// Visible CUDA devices; 0 without a driver or GPU (never an error).
int DeviceCount();

// Builds any family on the GPU named by options.device ("cuda" = device 0, "cuda:N"),
// computing in options.dtype ("fp32" or "bf16"). FailedPrecondition when no GPU is
// visible.
absl::StatusOr<std::unique_ptr<Model>> BuildCudaModel(const Checkpoint& checkpoint,
                                                      const ModelConfig& config,
                                                      const LoadOptions& options);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_CUDA_MODELS_H_
