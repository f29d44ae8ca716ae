// `hgeval niah`: a Needle-in-a-Haystack sweep as a server job. Submits it (or re-attaches
// to a running one with --job), shows progress, and writes the results JSON, the grid CSV
// and the heatmap PNG (drawn here) to --output_dir. The sweep's flags are hgeval-niah's
// (tasks/niah/niah_flags.h).
#ifndef HGEVAL_CLIENT_NIAH_COMMAND_H_
#define HGEVAL_CLIENT_NIAH_COMMAND_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace hgeval::client {

// Watches a job to its final state (with the CLI's progress bar).
using JobWatcher =
    std::function<absl::StatusOr<hgeval::v1::Job>(Client& client, const std::string& id)>;

// Returns the process exit code.
int RunNiahCommand(Client& client, const JobWatcher& watch);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_NIAH_COMMAND_H_
