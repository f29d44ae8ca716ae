// A model checkpoint: config.json plus named tensors, from a Hugging Face folder
// (model.safetensors or pytorch_model.bin, or shards listed in their index.json), from a
// llama2.c .bin file, or built in memory (tests, random-weight benchmark models).
#ifndef HGEVAL_ENGINE_LOADER_CHECKPOINT_H_
#define HGEVAL_ENGINE_LOADER_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"

namespace hgeval {

enum class DType { kF32, kBF16, kF16, kF64, kI64, kI32, kI8, kU8, kBool };

std::string_view DTypeName(DType dtype);  // safetensors spelling: "F32", "BF16", ...
size_t DTypeSize(DType dtype);

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::string file;  // where it lives (for error messages); "<memory>" when built in memory
};

// A float tensor in host memory, row-major.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
};

class Checkpoint {
 public:
  virtual ~Checkpoint() = default;

  // The parsed config.json.
  virtual const nlohmann::json& config() const = 0;
  // A human-readable origin (folder or file path).
  virtual const std::string& source() const = 0;
  virtual std::vector<std::string> TensorNames() const = 0;
  virtual bool Has(std::string_view name) const = 0;
  virtual absl::StatusOr<TensorInfo> Info(std::string_view name) const = 0;
  // The tensor converted to float32 (from F32, BF16, F16). `expected_shape` must match
  // exactly; an empty span skips the check. Errors name the file and the tensor: missing
  // tensor, wrong shape or dtype, NaN/Inf values.
  virtual absl::StatusOr<HostTensor> ReadFloat(std::string_view name,
                                               absl::Span<const int64_t> expected_shape) const = 0;
  // Raw bytes of the tensor in its stored dtype (for backends that upload bf16 directly).
  virtual absl::StatusOr<absl::Span<const uint8_t>> RawBytes(std::string_view name) const = 0;
  // A stable hex digest of the weights and config (the result store's model key).
  virtual std::string ContentHash() const = 0;
};

// Opens a Hugging Face checkpoint folder: config.json and model.safetensors or
// model.safetensors.index.json with its shards; failing those, pytorch_model.bin or
// pytorch_model.bin.index.json with its shards (engine/loader/torch_checkpoint.h). Files are
// memory-mapped and validated (header bounds, offsets within the file and non-overlapping, dtype
// sizes).
absl::StatusOr<std::unique_ptr<Checkpoint>> OpenCheckpoint(const std::string& dir);

// Opens a llama2.c checkpoint (.bin, the legacy "version 0" export) as a LLaMA checkpoint
// with Hugging Face tensor names; q/k rows are permuted from llama2.c's interleaved RoPE
// layout to HF's rotate_half layout.
absl::StatusOr<std::unique_ptr<Checkpoint>> OpenLlama2cCheckpoint(const std::string& bin_path);

// An in-memory checkpoint (tests, random-weight benchmark models).
std::unique_ptr<Checkpoint> MakeMemoryCheckpoint(nlohmann::json config,
                                                 std::map<std::string, HostTensor> tensors);

// Writes tensors as a safetensors file with the given dtype (F32, BF16 or F16; BF16 and
// F16 round to nearest even). Used by tests that rewrite checkpoints and by tools.
absl::Status WriteSafetensors(const std::string& path,
                              const std::map<std::string, HostTensor>& tensors, DType dtype);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_CHECKPOINT_H_
