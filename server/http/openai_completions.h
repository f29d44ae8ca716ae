// OpenAI's legacy completions API (`POST /v1/completions`, `GET /v1/models`) translated
// onto hgeval.v1.ModelService calls, as lm-evaluation-harness's `local-completions` model
// uses it: loglikelihood sends `echo=true, logprobs=1, max_tokens=1` (or 0) and reads
// `choices[i].logprobs.token_logprobs` / `top_logprobs`; generate_until sends `stop`,
// `max_tokens`, `temperature`, `seed`. Every call goes through the service's own handlers
// (request preparation, limits, result store, scheduler, bearer auth): this module only
// translates JSON to RPCs and back.
#ifndef HGEVAL_SERVER_HTTP_OPENAI_COMPLETIONS_H_
#define HGEVAL_SERVER_HTTP_OPENAI_COMPLETIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hgeval/v1/models.grpc.pb.h"
#include "server/http/http_gateway.h"

namespace hgeval::server {

// A parsed `POST /v1/completions` body. Exactly one of text_prompts / id_prompts is set.
struct CompletionRequest {
  std::string model;
  bool prompts_are_ids = false;
  std::vector<std::string> text_prompts;
  std::vector<std::vector<int32_t>> id_prompts;
  int32_t max_tokens = 16;   // OpenAI's default
  float temperature = 1.0f;  // OpenAI's default; 0 is greedy
  float top_p = 1.0f;
  std::vector<std::string> stop;
  uint64_t seed = 0;
  bool echo = false;
  std::optional<int32_t> logprobs;  // top alternatives per position; unset: no logprobs
};

// Parses and type-checks a body. INVALID_ARGUMENT naming the field (also attached as the
// OpenAI `param`, see ErrorParam in server/http/http_gateway.h) for malformed JSON, missing or
// mistyped fields and the options this endpoint does not offer (`n` or `best_of` other
// than 1, `stream`, `suffix`). Values are range-checked by the RPCs, not here.
// The JSON is parsed under `limits` (RESOURCE_EXHAUSTED past them).
// `path_model`: the model a model-scoped path names (then `model` may be left out).
absl::StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body,
                                                         const JsonLimits& limits = {},
                                                         const std::string& path_model = "");

// Bytes of JSON the response to `request` would hold, at least (each shown token with its
// offset and log-probability, each alternative with its piece), given the prompts' token
// counts: what --http_max_response_bytes bounds before anything is computed.
int64_t EstimateResponseBytes(const CompletionRequest& request,
                              const std::vector<int64_t>& prompt_tokens);

// Runs completions and model listings through a ModelService stub (the server's
// in-process channel). `authorization` is the HTTP Authorization header, passed on as the
// RPCs' metadata so the service's bearer check applies unchanged.
class CompletionsGateway {
 public:
  // Responses estimated over `max_response_bytes` are refused before computing.
  explicit CompletionsGateway(hgeval::v1::ModelService::StubInterface* stub,
                              JsonLimits json_limits = {}, int64_t max_response_bytes = 64 << 20)
      : stub_(stub), json_limits_(json_limits), max_response_bytes_(max_response_bytes) {}

  const JsonLimits& json_limits() const { return json_limits_; }

  // The `GET /v1/models` body; under /models/<name>/ (`path_model`) that model alone
  // (NOT_FOUND when the server has no such model).
  absl::StatusOr<std::string> ListModels(const std::string& authorization,
                                         const std::string& path_model = "") const;
  // The `POST /v1/completions` body for a parsed request.
  absl::StatusOr<std::string> Complete(const CompletionRequest& request,
                                       const std::string& authorization) const;

 private:
  hgeval::v1::ModelService::StubInterface* stub_;
  const JsonLimits json_limits_;
  const int64_t max_response_bytes_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_HTTP_OPENAI_COMPLETIONS_H_
