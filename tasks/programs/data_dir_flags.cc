// --data_dir of eval_flags.h, an object of its own: hgeval-server reads it without the
// run's other flags.
#include <string>

#include "absl/flags/flag.h"
#include "tasks/programs/cli_options.h"
#include "tasks/programs/eval_flags.h"

ABSL_FLAG(std::string, data_dir, "",
          "Task datasets, the repository's data/ layout (default: $HGEVAL_DATA_DIR, else the "
          "source tree's data/, else ./data).");

namespace hgeval::tasks {

std::string DataDirFromFlags() {
  const std::string dir = absl::GetFlag(FLAGS_data_dir);
  return dir.empty() ? DefaultDataDir() : dir;
}

}  // namespace hgeval::tasks
