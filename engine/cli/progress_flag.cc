// --progress of common_flags.h.
#include "absl/flags/flag.h"
#include "engine/cli/common_flags.h"

ABSL_FLAG(bool, progress, true,
          "Progress bar (with an ETA) and run summary on stderr; --noprogress: none.");

namespace hgeval::cli {

bool ProgressFromFlags() { return absl::GetFlag(FLAGS_progress); }

}  // namespace hgeval::cli
