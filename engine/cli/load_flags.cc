#include "engine/cli/load_flags.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/util/memory_budget.h"

ABSL_FLAG(std::string, device, "cpu",
          "Device: cpu, cuda or cuda:N (hgeval-server: of its --model and --model_root "
          "models).");
ABSL_FLAG(std::string, dtype, "fp32", "Arithmetic dtype: fp32, or bf16 (CUDA only).");
ABSL_FLAG(int, threads, 0, "CPU threads per model (0: all cores).");
ABSL_FLAG(int64_t, max_context, 0,
          "LLaMA: accept sequences up to this many positions, past max_position_embeddings "
          "(RoPE extrapolation, e.g. NIAH beyond the training length); 0: the config's. "
          "Recurrent models ignore it; lm-eval tasks keep max_position_embeddings as "
          "max_length.");

ABSL_FLAG(std::string, device_memory, "",
          "GPU memory budget shared by every model on a GPU (weights, sequence states, "
          "scratch): bytes with a unit (20GiB, 512MiB), a fraction of the GPU's memory (0.5) "
          "or a percentage (50%). Work is sized to fit it (slower when small, same "
          "numbers); a request that cannot fit alone is refused with RESOURCE_EXHAUSTED. "
          "Empty: what the GPU has free at the first load, less a margin.");
ABSL_FLAG(std::string, host_memory, "",
          "CPU backend: memory budget for the models' weights and sequence states, as "
          "--device_memory (a fraction is of the host's available memory). Empty: no fixed "
          "limit (scoring still sizes its rounds by the host's available memory).");

namespace hgeval::cli {

absl::StatusOr<LoadOptions> LoadOptionsFromFlags() {
  LoadOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  options.dtype = absl::GetFlag(FLAGS_dtype);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.max_context = absl::GetFlag(FLAGS_max_context);
  options.device_memory = absl::GetFlag(FLAGS_device_memory);
  options.host_memory = absl::GetFlag(FLAGS_host_memory);
  // The forms are checked here, before any model loads (fractions need the memory's size,
  // which BuildModel reads).
  for (const auto& [flag, value] :
       {std::pair<const char*, std::string>{"--device_memory", options.device_memory},
        {"--host_memory", options.host_memory}}) {
    if (absl::Status s = ParseMemorySize(value, size_t{1} << 40).status(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.message()));
    }
  }
  if (options.device != "cpu" && options.device != "cuda" &&
      !absl::StartsWith(options.device, "cuda:")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be cpu, cuda or cuda:N, got '", options.device, "'"));
  }
  return options;
}

}  // namespace hgeval::cli
