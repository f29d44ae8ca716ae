// Opens a checkpoint and builds the model on a backend.
#ifndef HGEVAL_ENGINE_MODEL_LOAD_MODEL_H_
#define HGEVAL_ENGINE_MODEL_LOAD_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/model.h"

namespace hgeval {

struct LoadOptions {
  // "cpu", "cuda" or "cuda:N". Without a usable GPU, "cuda" fails with
  // FailedPrecondition and a message saying so (callers may fall back to the CPU).
  std::string device = "cpu";
  // "fp32" or "bf16" (CUDA only; the CPU backend always computes in fp32).
  std::string dtype = "fp32";
  // CPU threads per Forward call (the process shares one pool of hardware-concurrency
  // workers); 0 = all. Results do not depend on it.
  int threads = 0;
  // Longest sequence (positions) a LLaMA accepts. 0: the config's max_position_embeddings
  // (its training length). > 0: up to this many positions, past the training length
  // (RoPE is computed per position, so this is plain RoPE extrapolation; quality beyond
  // the training length is the model's own). The model's config() keeps the checkpoint's
  // max_position_embeddings; info().max_context reports the limit in force. Recurrent
  // models are unbounded and ignore it.
  int64_t max_context = 0;
  // The memory budget of the GPU this model goes on (--device_memory): bytes with a unit
  // ("20GiB"), a fraction of the GPU's memory ("0.5") or a percentage ("50%"). Empty:
  // what the GPU has free when its first model loads, less a margin. Every model on the
  // GPU shares it; the last load that names one sets it.
  std::string device_memory;
  // The same for the host's memory on the CPU backend (--host_memory; a fraction is of
  // the host's available memory). Empty: unbounded by a number (the scorer still sizes
  // its rounds by the host's available memory).
  std::string host_memory;
};

// Builds the model from an open checkpoint (any family in ModelFamily).
absl::StatusOr<std::unique_ptr<Model>> BuildModel(const Checkpoint& checkpoint,
                                                  const LoadOptions& options);

// Opens `path`: a llama2.c .bin file, else a Hugging Face folder.
absl::StatusOr<std::unique_ptr<Checkpoint>> OpenModelCheckpoint(const std::string& path);

// `path` is a Hugging Face folder or a llama2.c .bin file.
absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& path,
                                                 const LoadOptions& options);

// Whether this build has the CUDA backend and a GPU is visible.
bool CudaAvailable();

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_LOAD_MODEL_H_
