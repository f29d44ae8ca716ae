// The safetensors format: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]}, ...,
// "__metadata__": {...}}, then the data section, which the offsets index.
//
// Error codes: DataLoss when the file is shorter than its header says (truncated file,
// header length or tensor data past the end); InvalidArgument for any other malformed
// header. Every message starts with the file name and names the tensor where there is one.
#ifndef HGEVAL_ENGINE_LOADER_SAFETENSORS_H_
#define HGEVAL_ENGINE_LOADER_SAFETENSORS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/mapped_file.h"

namespace hgeval {

// Headers above this size are rejected (the reference implementation's limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

struct SafetensorsTensor {
  TensorInfo info;
  absl::Span<const uint8_t> bytes;  // inside `contents`, already bounds-checked
};

// Parses and validates a whole safetensors file held in `contents`; `file` is used in
// messages only. Validates everything before any tensor data is touched: header bounds,
// JSON, dtypes, shapes, offsets within the data section, byte sizes, overlaps, duplicates.
// Tensors come back sorted by name.
absl::StatusOr<std::vector<SafetensorsTensor>> ParseSafetensors(std::string_view file,
                                                                absl::Span<const uint8_t> contents);

// The safetensors spelling ("BF16") to DType; false when unknown.
bool ParseDTypeName(std::string_view name, DType* dtype);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_SAFETENSORS_H_
