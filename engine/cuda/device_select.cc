#include "engine/cuda/device_select.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/device.h"

namespace hgeval::cuda {

absl::StatusOr<int> SelectCudaDevice(const std::string& device) {
  int index = 0;
  if (device != "cuda") {
    const std::string prefix = "cuda:";
    if (!absl::StartsWith(device, prefix) ||
        !absl::SimpleAtoi(device.substr(prefix.size()), &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device must be cuda or cuda:N, got '", device, "'"));
    }
  }
  const int count = VisibleDeviceCount();
  if (count == 0) {
    return absl::FailedPreconditionError(
        "no CUDA GPU is visible (no driver or no device); use --device cpu");
  }
  if (index >= count) {
    return absl::FailedPreconditionError(absl::StrCat("device cuda:", index, " does not exist (",
                                                      count, " CUDA device(s) visible)"));
  }
  return index;
}

}  // namespace hgeval::cuda
