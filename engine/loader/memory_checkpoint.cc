// MakeMemoryCheckpoint: float32 tensors held in memory (tests, random-weight models).
#include "absl/strings/str_cat.h"
#include "engine/loader/checkpoint.h"
#include "engine/loader/tensor_table.h"

namespace hgeval {

std::unique_ptr<Checkpoint> MakeMemoryCheckpoint(nlohmann::json config,
                                                 std::map<std::string, HostTensor> tensors) {
  std::string config_bytes = config.dump();
  auto table = std::make_unique<TensorTableCheckpoint>(std::move(config), std::move(config_bytes),
                                                       "<memory>");
  auto storage = std::make_shared<std::map<std::string, HostTensor>>(std::move(tensors));
  for (const auto& [name, tensor] : *storage) {
    TensorEntry entry;
    entry.info.name = name;
    entry.info.dtype = DType::kF32;
    entry.info.shape = tensor.shape;
    entry.info.file = "<memory>";
    entry.bytes = {reinterpret_cast<const uint8_t*>(tensor.data.data()),
                   tensor.data.size() * sizeof(float)};
    int64_t numel = 1;
    bool valid = true;
    for (int64_t dim : tensor.shape) {
      if (dim < 0 || __builtin_mul_overflow(numel, dim, &numel)) valid = false;
    }
    if (!valid || numel != tensor.numel()) {
      // This factory cannot fail; the mismatch surfaces on every access to the tensor.
      entry.error =
          absl::StrCat("<memory>: tensor '", name, "' has shape ", ShapeString(tensor.shape),
                       " but holds ", tensor.numel(), " values");
    }
    table->AddTensor(std::move(entry));
  }
  table->KeepAlive(std::move(storage));
  return table;
}

}  // namespace hgeval
