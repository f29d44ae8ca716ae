// The sampling flags of generation_flags.h.
#include "absl/flags/flag.h"
#include "engine/cli/generation_flags.h"

ABSL_FLAG(double, temperature, 0, "Sampling temperature; 0 is greedy.");
ABSL_FLAG(double, top_p, 1, "Nucleus sampling mass in (0, 1].");
ABSL_FLAG(uint64_t, seed, 0, "Sampling seed (same seed, same text).");

namespace hgeval::cli {

Sampling SamplingFromFlags() {
  return {.temperature = absl::GetFlag(FLAGS_temperature),
          .top_p = absl::GetFlag(FLAGS_top_p),
          .seed = absl::GetFlag(FLAGS_seed)};
}

}  // namespace hgeval::cli
