#include "engine/cli/load_flags.h"

#include <cstdint>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

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

namespace hgeval::cli {

absl::StatusOr<LoadOptions> LoadOptionsFromFlags() {
  LoadOptions options;
  options.device = absl::GetFlag(FLAGS_device);
  options.dtype = absl::GetFlag(FLAGS_dtype);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.max_context = absl::GetFlag(FLAGS_max_context);
  if (options.device != "cpu" && options.device != "cuda" &&
      !absl::StartsWith(options.device, "cuda:")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be cpu, cuda or cuda:N, got '", options.device, "'"));
  }
  return options;
}

}  // namespace hgeval::cli
