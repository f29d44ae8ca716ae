// PyTorch checkpoints as torch.save (>= 1.6) writes them, e.g. Hugging Face's
// pytorch_model.bin: a ZIP archive holding data.pkl (the state dict's pickle, read by
// engine/loader/torch_pickle without executing it) and one entry per storage (data/<key>).
#ifndef HGEVAL_ENGINE_LOADER_TORCH_CHECKPOINT_H_
#define HGEVAL_ENGINE_LOADER_TORCH_CHECKPOINT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "engine/loader/tensor_table.h"

namespace hgeval {

// Maps `path` and returns its tensors by name, their bytes inside the map (contiguous
// tensors) or in buffers the table keeps alive (strided views are gathered once). Errors
// name the file and the tensor: the legacy pre-1.6 format, a big-endian archive, a storage
// entry missing or shorter than a view needs.
absl::StatusOr<std::map<std::string, TensorEntry>> OpenTorchCheckpointFile(
    const std::string& path, TensorTableCheckpoint& table);

// The same for an archive already in memory (`contents` must outlive the table); `file`
// names it in messages.
absl::StatusOr<std::map<std::string, TensorEntry>> ReadTorchCheckpoint(
    const std::string& file, absl::Span<const uint8_t> contents, TensorTableCheckpoint& table);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_TORCH_CHECKPOINT_H_
