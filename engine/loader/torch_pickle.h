// Reads the pickle of a PyTorch state dict (the data.pkl of a torch.save archive) without
// executing anything: a small pickle machine that knows the opcodes of protocols 2-5 that
// carry plain data, and only the callables a state dict of tensors uses
// (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the
// torch.*Storage types). Any other global is refused by name, so a crafted file can do
// nothing but fail to load.
#ifndef HGEVAL_ENGINE_LOADER_TORCH_PICKLE_H_
#define HGEVAL_ENGINE_LOADER_TORCH_PICKLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/loader/checkpoint.h"

namespace hgeval {

// One tensor of the state dict: a strided view of a storage (a separate archive entry).
struct PickledTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::string storage_key;     // the archive entry data/<storage_key>
  int64_t storage_numel = 0;   // elements the storage holds
  int64_t storage_offset = 0;  // in elements
  std::vector<int64_t> shape;
  std::vector<int64_t> stride;  // in elements
};

// Parses `pickle` (a flat mapping of names to tensors) into its tensors, in file order.
// InvalidArgument, naming `file`, for anything else: other objects, unknown opcodes,
// truncated data, non-string keys.
absl::StatusOr<std::vector<PickledTensor>> ParseTorchStateDictPickle(
    std::string_view file, absl::Span<const uint8_t> pickle);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_TORCH_PICKLE_H_
