// `hgeval sweep`: the command-line face of client/sweep.h (its flags: --series or
// --checkpoints, --tasks, --limit, --bos, --max_length, --fit_metric, --output_dir).
#ifndef HGEVAL_CLIENT_SWEEP_COMMAND_H_
#define HGEVAL_CLIENT_SWEEP_COMMAND_H_

#include "client/client.h"
#include "client/sweep.h"

namespace hgeval::client {

// Returns the process exit code.
int RunSweepCommand(Client& client, const SweepWatcher& watch, hgeval::v1::BosMode bos);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_SWEEP_COMMAND_H_
