// The mixed request load shared by the load test and bench/server_load_bench.cc:
// deterministic requests per (client, index) and a canonical text form of each answer
// (so answers compare exactly).
#ifndef HGEVAL_TESTS_SERVER_LOAD_MIX_H_
#define HGEVAL_TESTS_SERVER_LOAD_MIX_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace hgeval::testing {

struct LoadRequest {
  enum Kind { kLoglikelihood, kRolling, kGenerate, kTokenize } kind = kLoglikelihood;
  hgeval::v1::LoglikelihoodRequest loglikelihood;
  hgeval::v1::LoglikelihoodRollingRequest rolling;
  hgeval::v1::GenerateRequest generate;
  hgeval::v1::TokenizeRequest tokenize;
  int64_t tokens = 0;  // tokens the request feeds or generates (for throughput)
};

// Requests bypass the result store (no_cache) so every one is computed.
LoadRequest MakeLoadRequest(const std::string& model, int client, int index);
// The answer in canonical text form (bit-exact floats).
absl::StatusOr<std::string> RunLoadRequest(client::Client& client, const LoadRequest& request);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_LOAD_MIX_H_
