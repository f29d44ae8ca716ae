// The results table printed by `hgeval run`: lm-eval's make_table, through the same
// renderer as hgeval-eval (tasks::ResultsTable), from the job's results JSON.
#ifndef HGEVAL_CLIENT_RESULTS_TABLE_H_
#define HGEVAL_CLIENT_RESULTS_TABLE_H_

#include <string>

#include "hgeval/v1/jobs.pb.h"

namespace hgeval::client {

std::string FormatResultsTable(const hgeval::v1::Job& job);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_RESULTS_TABLE_H_
