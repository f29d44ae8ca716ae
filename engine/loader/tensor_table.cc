#include "engine/loader/tensor_table.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/loader/content_hash.h"
#include "engine/loader/float_convert.h"

namespace hgeval {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kBF16:
      return "BF16";
    case DType::kF16:
      return "F16";
    case DType::kF64:
      return "F64";
    case DType::kI64:
      return "I64";
    case DType::kI32:
      return "I32";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    case DType::kBool:
      return "BOOL";
  }
  return "?";
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kBF16:
    case DType::kF16:
      return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool:
      return 1;
  }
  return 1;
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

bool ConvertToFloat(DType dtype, const uint8_t* bytes, size_t count, float* out,
                    size_t* bad_index) {
  switch (dtype) {
    case DType::kF32:
      if (count > 0) std::memcpy(out, bytes, count * sizeof(float));  // empty: bytes may be null
      break;
    case DType::kBF16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out[i] = Bf16ToFloat(bits);
      }
      break;
    case DType::kF16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t bits;
        std::memcpy(&bits, bytes + 2 * i, 2);
        out[i] = F16ToFloat(bits);
      }
      break;
    default:
      *bad_index = 0;
      return false;
  }
  // One pass over the result; the common case (all finite) vectorises.
  bool all_finite = true;
  for (size_t i = 0; i < count; ++i) all_finite &= std::isfinite(out[i]);
  if (all_finite) return true;
  for (size_t i = 0; i < count; ++i) {
    if (!std::isfinite(out[i])) {
      *bad_index = i;
      return false;
    }
  }
  return true;
}

TensorTableCheckpoint::TensorTableCheckpoint(nlohmann::json config, std::string config_bytes,
                                             std::string source)
    : config_(std::move(config)),
      config_bytes_(std::move(config_bytes)),
      source_(std::move(source)) {}

void TensorTableCheckpoint::AddTensor(TensorEntry entry) {
  std::string name = entry.info.name;
  tensors_.insert_or_assign(std::move(name), std::move(entry));
}

std::vector<std::string> TensorTableCheckpoint::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, entry] : tensors_) names.push_back(name);
  return names;
}

bool TensorTableCheckpoint::Has(std::string_view name) const {
  return tensors_.find(name) != tensors_.end();
}

absl::StatusOr<const TensorEntry*> TensorTableCheckpoint::Find(std::string_view name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    return absl::NotFoundError(
        absl::StrCat("checkpoint ", source_, ": tensor '", std::string(name), "' not found"));
  }
  if (!it->second.error.empty()) return absl::InvalidArgumentError(it->second.error);
  return &it->second;
}

absl::StatusOr<TensorInfo> TensorTableCheckpoint::Info(std::string_view name) const {
  auto entry = Find(name);
  if (!entry.ok()) return entry.status();
  return (*entry)->info;
}

absl::StatusOr<absl::Span<const uint8_t>> TensorTableCheckpoint::RawBytes(
    std::string_view name) const {
  auto entry = Find(name);
  if (!entry.ok()) return entry.status();
  return (*entry)->bytes;
}

absl::StatusOr<HostTensor> TensorTableCheckpoint::ReadFloat(
    std::string_view name, absl::Span<const int64_t> expected_shape) const {
  auto found = Find(name);
  if (!found.ok()) return found.status();
  const TensorEntry& entry = **found;
  const TensorInfo& info = entry.info;
  if (!expected_shape.empty() && absl::Span<const int64_t>(info.shape) != expected_shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(info.file, ": tensor '", info.name, "' has shape ", ShapeString(info.shape),
                     " but the config implies ", ShapeString(expected_shape)));
  }
  if (info.dtype != DType::kF32 && info.dtype != DType::kBF16 && info.dtype != DType::kF16) {
    return absl::InvalidArgumentError(
        absl::StrCat(info.file, ": tensor '", info.name, "' has dtype ",
                     std::string(DTypeName(info.dtype)), "; a weight must be F32, BF16 or F16"));
  }
  const size_t count = entry.bytes.size() / DTypeSize(info.dtype);
  HostTensor tensor;
  tensor.shape = info.shape;
  tensor.data.resize(count);
  size_t bad = 0;
  if (!ConvertToFloat(info.dtype, entry.bytes.data(), count, tensor.data.data(), &bad)) {
    return absl::InvalidArgumentError(absl::StrCat(info.file, ": tensor '", info.name,
                                                   "' holds a non-finite value (", tensor.data[bad],
                                                   ") at flat index ", bad));
  }
  return tensor;
}

std::string TensorTableCheckpoint::ContentHash() const {
  std::call_once(hash_once_, [this] {
    ContentHasher hasher;
    hasher.Update("hgeval-checkpoint-v1");
    hasher.UpdateU64(config_bytes_.size());
    hasher.Update(config_bytes_);
    hasher.UpdateU64(tensors_.size());
    for (const auto& [name, entry] : tensors_) {
      hasher.UpdateU64(name.size());
      hasher.Update(name);
      hasher.UpdateU64(DTypeName(entry.info.dtype).size());
      hasher.Update(DTypeName(entry.info.dtype));
      hasher.UpdateU64(entry.info.shape.size());
      for (int64_t dim : entry.info.shape) hasher.UpdateU64(static_cast<uint64_t>(dim));
      hasher.UpdateU64(entry.bytes.size());
      hasher.Update(entry.bytes.data(), entry.bytes.size());
    }
    hash_ = hasher.HexDigest();
  });
  return hash_;
}

}  // namespace hgeval
