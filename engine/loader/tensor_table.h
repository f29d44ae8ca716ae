// TensorTableCheckpoint: the Checkpoint implementation shared by every source (safetensors
// files, llama2.c files, memory). A source builds a table of named tensors whose bytes live
// in storage the table keeps alive (memory maps, owned buffers); reading, validation and
// hashing are done here once.
#ifndef HGEVAL_ENGINE_LOADER_TENSOR_TABLE_H_
#define HGEVAL_ENGINE_LOADER_TENSOR_TABLE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"

namespace hgeval {

struct TensorEntry {
  TensorInfo info;
  absl::Span<const uint8_t> bytes;  // exactly numel * DTypeSize(info.dtype) bytes
  // Non-empty: the tensor is unusable (e.g. an in-memory tensor whose data does not match
  // its shape) and every access returns this as an InvalidArgument error.
  std::string error;
};

class TensorTableCheckpoint : public Checkpoint {
 public:
  // `config_bytes` is what ContentHash covers for the config (the file's exact bytes, or a
  // canonical dump for synthesized configs).
  TensorTableCheckpoint(nlohmann::json config, std::string config_bytes, std::string source);

  // Keeps `owner` alive as long as the checkpoint (the storage the entries point into).
  void KeepAlive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }
  // Adds or replaces a tensor. The caller guarantees bytes.size() matches dtype and shape.
  void AddTensor(TensorEntry entry);

  const nlohmann::json& config() const override { return config_; }
  const std::string& source() const override { return source_; }
  std::vector<std::string> TensorNames() const override;
  bool Has(std::string_view name) const override;
  absl::StatusOr<TensorInfo> Info(std::string_view name) const override;
  absl::StatusOr<HostTensor> ReadFloat(std::string_view name,
                                       absl::Span<const int64_t> expected_shape) const override;
  absl::StatusOr<absl::Span<const uint8_t>> RawBytes(std::string_view name) const override;
  std::string ContentHash() const override;

 private:
  absl::StatusOr<const TensorEntry*> Find(std::string_view name) const;

  nlohmann::json config_;
  std::string config_bytes_;
  std::string source_;
  std::map<std::string, TensorEntry, std::less<>> tensors_;
  std::vector<std::shared_ptr<const void>> owners_;
  mutable std::once_flag hash_once_;
  mutable std::string hash_;
};

// "[2, 3]"
std::string ShapeString(absl::Span<const int64_t> shape);

// Converts `count` stored values of `dtype` (F32, BF16 or F16) to float, rejecting NaN/Inf.
// On a non-finite value returns its flat index through `bad_index` and false.
bool ConvertToFloat(DType dtype, const uint8_t* bytes, size_t count, float* out, size_t* bad_index);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_TENSOR_TABLE_H_
