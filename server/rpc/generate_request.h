// A Generate call turned into the work the scheduler runs: its parameters validated
// (before the model is looked up: they need none) and its prompt tokenized for the model
// (text, ids, or lm-eval's generate_until preparation). Every rejection carries the code
// the wire contract names.
#ifndef HGEVAL_SERVER_RPC_GENERATE_REQUEST_H_
#define HGEVAL_SERVER_RPC_GENERATE_REQUEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/runtime/generation.h"
#include "hgeval/v1/models.pb.h"
#include "server/exec/model_registry.h"
#include "server/rpc/service_limits.h"

namespace hgeval::server {

// The call's checks that need no model (shape, sizes, sampling, stop strings); returns
// the stop strings (`until`).
absl::StatusOr<std::vector<std::string>> ValidateGenerateRequest(
    const hgeval::v1::GenerateRequest& request, const ServiceLimits& limits);

// What a validated call asks of `model`.
struct GenerationPlan {
  GenerateRequest request;         // what the scheduler runs
  std::vector<std::string> until;  // the stop strings as the store key names them
  bool lm_eval = false;            // the text is lm-eval's (the completion decoded alone)
};

// Tokenizes the prompt, checks that it and max_tokens fit the model, and fills the
// sampling (greedy calls sample nothing: top_p 1, seed 0) and stop rules.
absl::StatusOr<GenerationPlan> PlanGeneration(const hgeval::v1::GenerateRequest& request,
                                              const LoadedModel& model,
                                              std::vector<std::string> until);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_RPC_GENERATE_REQUEST_H_
