#include "engine/cuda/cuda_models.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_model.h"
#include "engine/cuda/device.h"

namespace hgeval::cuda {

int DeviceCount() { return VisibleDeviceCount(); }

absl::StatusOr<std::unique_ptr<Model>> BuildCudaModel(const Checkpoint& checkpoint,
                                                      const ModelConfig& config,
                                                      const LoadOptions& options) {
  int device = 0;
  if (options.device != "cuda") {
    const std::string prefix = "cuda:";
    if (!absl::StartsWith(options.device, prefix) ||
        !absl::SimpleAtoi(options.device.substr(prefix.size()), &device) || device < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device must be cuda or cuda:N, got '", options.device, "'"));
    }
  }
  Act act;
  if (options.dtype == "fp32") {
    act = Act::kF32;
  } else if (options.dtype == "bf16") {
    act = Act::kBF16;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype must be fp32 or bf16, got '", options.dtype, "'"));
  }
  const int count = DeviceCount();
  if (count == 0) {
    return absl::FailedPreconditionError(
        "no CUDA GPU is visible (no driver or no device); use --device cpu");
  }
  if (device >= count) {
    return absl::FailedPreconditionError(absl::StrCat("device cuda:", device, " does not exist (",
                                                      count, " CUDA device(s) visible)"));
  }
  auto model = CudaModel::Build(checkpoint, config, device, act, options.max_context);
  if (!model.ok()) return model.status();
  return std::unique_ptr<Model>(std::move(*model));
}

}  // namespace hgeval::cuda
