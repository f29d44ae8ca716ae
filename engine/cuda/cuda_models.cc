#include "engine/cuda/cuda_models.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_model.h"
#include "engine/cuda/device.h"
#include "engine/cuda/device_select.h"

namespace hgeval::cuda {

int DeviceCount() { return VisibleDeviceCount(); }

absl::StatusOr<std::unique_ptr<Model>> BuildCudaModel(const Checkpoint& checkpoint,
                                                      const ModelConfig& config,
                                                      const LoadOptions& options) {
  // The dtype first: a bad one is the caller's error even on a machine without a GPU.
  Act act;
  if (options.dtype == "fp32") {
    act = Act::kF32;
  } else if (options.dtype == "bf16") {
    act = Act::kBF16;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype must be fp32 or bf16, got '", options.dtype, "'"));
  }
  auto device = SelectCudaDevice(options.device);
  if (!device.ok()) return device.status();
  if (absl::Status s = SetDeviceMemoryLimit(*device, options.device_memory); !s.ok()) return s;
  auto model = CudaModel::Build(checkpoint, config, *device, act, options.max_context);
  if (!model.ok()) return model.status();
  return std::unique_ptr<Model>(std::move(*model));
}

}  // namespace hgeval::cuda
