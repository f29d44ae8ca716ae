// What `hgeval niah` leaves in its output folder for a finished NIAH job: the results
// JSON and grid CSV the server produced, and the heatmap PNG drawn here from the JSON.
#ifndef HGEVAL_CLIENT_NIAH_OUTPUTS_H_
#define HGEVAL_CLIENT_NIAH_OUTPUTS_H_

#include <string>

#include "absl/status/status.h"
#include "hgeval/v1/jobs.pb.h"

namespace hgeval::client {

// Writes <dir>/niah_results.json, <dir>/niah_grid.csv and <dir>/niah_heatmap.png
// (creating dir). FailedPrecondition when the job is not a finished NIAH job.
absl::Status WriteNiahJobOutputs(const hgeval::v1::Job& job, const std::string& dir);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_NIAH_OUTPUTS_H_
