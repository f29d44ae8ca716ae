// The per-call limits of hgeval.v1.ModelService (docs/service.md, "Limits").
#ifndef HGEVAL_SERVER_RPC_SERVICE_LIMITS_H_
#define HGEVAL_SERVER_RPC_SERVICE_LIMITS_H_

#include <cstdint>

namespace hgeval::server {

struct ServiceLimits {
  int64_t max_request_pairs = 4096;      // pairs (or rolling inputs) per call
  int64_t max_request_tokens = 1 << 20;  // tokens per call, summed over pairs, before truncation
  int64_t max_request_bytes = 8 << 20;   // message bytes per call, checked before anything
  int64_t max_generate_tokens = 2048;    // max_tokens of one generation
  int32_t max_top_k = 100;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_RPC_SERVICE_LIMITS_H_
