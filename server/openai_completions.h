// OpenAI's legacy completions API (`POST /v1/completions`, `GET /v1/models`) translated
// onto hgeval.v1.ModelService calls, as lm-evaluation-harness's `local-completions` model
// uses it: loglikelihood sends `echo=true, logprobs=1, max_tokens=1` (or 0) and reads
// `choices[i].logprobs.token_logprobs` / `top_logprobs`; generate_until sends `stop`,
// `max_tokens`, `temperature`, `seed`. Every call goes through the service's own handlers
// (request preparation, limits, result store, scheduler, bearer auth): this module only
// translates JSON to RPCs and back.
#ifndef HGEVAL_SERVER_OPENAI_COMPLETIONS_H_
#define HGEVAL_SERVER_OPENAI_COMPLETIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hgeval/v1/models.grpc.pb.h"

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
// OpenAI `param`, see ErrorParam in server/http_gateway.h) for malformed JSON, missing or
// mistyped fields and the options this endpoint does not offer (`n` or `best_of` other
// than 1, `stream`, `suffix`). Values are range-checked by the RPCs, not here.
absl::StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body);

// Runs completions and model listings through a ModelService stub (the server's
// in-process channel). `authorization` is the HTTP Authorization header, passed on as the
// RPCs' metadata so the service's bearer check applies unchanged.
class CompletionsGateway {
 public:
  explicit CompletionsGateway(hgeval::v1::ModelService::StubInterface* stub) : stub_(stub) {}

  // The `GET /v1/models` body.
  absl::StatusOr<std::string> ListModels(const std::string& authorization) const;
  // The `POST /v1/completions` body for a parsed request.
  absl::StatusOr<std::string> Complete(const CompletionRequest& request,
                                       const std::string& authorization) const;

 private:
  hgeval::v1::ModelService::StubInterface* stub_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_OPENAI_COMPLETIONS_H_
