#include "engine/cuda/device_allocator.h"

#include "engine/loader/float_convert.h"
#include "engine/util/status_macros.h"

namespace hgeval::cuda {

absl::StatusOr<DeviceBuffer> DeviceAllocator::Alloc(size_t bytes) {
  return DeviceBuffer::Make(pool_, bytes == 0 ? 1 : bytes);
}

absl::Status DeviceAllocator::Grow(DeviceBuffer* buf, size_t bytes) {
  if (buf->size() >= bytes) return absl::OkStatus();
  buf->Reset();
  HG_ASSIGN_OR_RETURN(*buf, Alloc(bytes));
  return absl::OkStatus();
}

absl::Status DeviceAllocator::Floats(DeviceBuffer* out, size_t n) {
  HG_ASSIGN_OR_RETURN(*out, Alloc(n * sizeof(float)));
  return absl::OkStatus();
}

absl::Status DeviceAllocator::Acts(DeviceBuffer* out, size_t n) {
  HG_ASSIGN_OR_RETURN(*out, Alloc(n * ActSize(act_)));
  return absl::OkStatus();
}

absl::Status DeviceAllocator::UploadDerived(const std::vector<float>& values, DeviceBuffer* out) {
  HG_ASSIGN_OR_RETURN(*out, Alloc(values.size() * sizeof(float)));
  HG_RETURN_IF_ERROR(CopyToDevice(out->get(), values.data(), values.size() * sizeof(float)));
  return absl::OkStatus();
}

absl::Status DeviceAllocator::UploadFloat(const HostTensor& t, DeviceBuffer* out) {
  HG_RETURN_IF_ERROR(UploadDerived(t.data, out));
  num_parameters_ += t.numel();
  return absl::OkStatus();
}

absl::Status DeviceAllocator::UploadAct(const std::vector<const HostTensor*>& parts,
                                        DeviceBuffer* out, bool counted) {
  size_t total = 0;
  for (const HostTensor* p : parts) total += p->data.size();
  HG_ASSIGN_OR_RETURN(*out, Alloc(total * ActSize(act_)));
  size_t offset = 0;
  for (const HostTensor* p : parts) {
    if (counted) num_parameters_ += p->numel();
    const size_t n = p->data.size();
    if (act_ == Act::kF32) {
      HG_RETURN_IF_ERROR(
          CopyToDevice(out->as<float>() + offset, p->data.data(), n * sizeof(float)));
    } else {
      std::vector<uint16_t> tmp(n);
      for (size_t i = 0; i < n; ++i) tmp[i] = FloatToBf16(p->data[i]);
      HG_RETURN_IF_ERROR(
          CopyToDevice(out->as<uint16_t>() + offset, tmp.data(), n * sizeof(uint16_t)));
    }
    offset += n;
  }
  return absl::OkStatus();
}

}  // namespace hgeval::cuda
