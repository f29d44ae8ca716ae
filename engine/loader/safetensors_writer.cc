// WriteSafetensors: float tensors -> a safetensors file in F32, BF16 or F16.
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/float_convert.h"
#include "engine/loader/tensor_table.h"

namespace hgeval {

absl::Status WriteSafetensors(const std::string& path,
                              const std::map<std::string, HostTensor>& tensors, DType dtype) {
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16) {
    return absl::InvalidArgumentError(absl::StrCat("WriteSafetensors(", path, "): dtype ",
                                                   std::string(DTypeName(dtype)),
                                                   " is not F32, BF16 or F16"));
  }
  const size_t element_size = DTypeSize(dtype);
  // nlohmann's object is ordered by key, so the header lists tensors sorted by name and
  // the data follows in the same order without gaps.
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    int64_t numel = 1;
    for (int64_t dim : tensor.shape) numel *= dim;
    if (name.empty() || name == "__metadata__" || numel != tensor.numel()) {
      return absl::InvalidArgumentError(absl::StrCat("WriteSafetensors(", path, "): tensor '", name,
                                                     "' has shape ", ShapeString(tensor.shape),
                                                     " but holds ", tensor.numel(), " values"));
    }
    const uint64_t bytes = static_cast<uint64_t>(numel) * element_size;
    header[name] = {{"dtype", std::string(DTypeName(dtype))},
                    {"shape", tensor.shape},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string header_text = header.dump();
  // The data section starts 8-byte aligned: pad the header with spaces (valid JSON).
  header_text.append((8 - header_text.size() % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create"));
  uint8_t length[8];
  const uint64_t header_size = header_text.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(header_size >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(header_text.data(), static_cast<std::streamsize>(header_text.size()));
  std::vector<uint8_t> buffer;
  for (const auto& [name, tensor] : tensors) {
    buffer.resize(tensor.data.size() * element_size);
    for (size_t i = 0; i < tensor.data.size(); ++i) {
      const float value = tensor.data[i];
      if (dtype == DType::kF32) {
        std::memcpy(&buffer[4 * i], &value, 4);
      } else {
        const uint16_t bits = dtype == DType::kBF16 ? FloatToBf16(value) : FloatToF16(value);
        std::memcpy(&buffer[2 * i], &bits, 2);
      }
    }
    out.write(reinterpret_cast<const char*>(buffer.data()),
              static_cast<std::streamsize>(buffer.size()));
  }
  out.close();
  if (!out) return absl::DataLossError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

}  // namespace hgeval
