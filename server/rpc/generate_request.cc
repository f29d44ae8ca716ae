#include "server/rpc/generate_request.h"

#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/lm_eval/requests.h"
#include "engine/runtime/stop_tokens.h"
#include "proto/hgeval/v1/bos_mode.h"
#include "server/core/request_prep.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

absl::StatusOr<std::vector<std::string>> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                                 const ServiceLimits& limits) {
  const bool has_text = !request.prompt().empty();
  const bool has_ids = request.prompt_ids_size() > 0;
  if (has_text && has_ids) {
    return absl::InvalidArgumentError("give either prompt (text) or prompt_ids, not both");
  }
  if (!has_text && !has_ids && !request.lm_eval()) {
    return absl::InvalidArgumentError("the prompt is empty");
  }
  if (request.lm_eval() && has_ids) {
    return absl::InvalidArgumentError(
        "lm_eval prepares a text prompt; prompt_ids cannot be given with it");
  }
  if (request.max_length() < 0) return absl::InvalidArgumentError("max_length must be >= 0");
  if (absl::Status s = CheckRequestSize(request, limits.max_request_bytes); !s.ok()) return s;
  if (absl::Status s = CheckBosMode(request.bos_mode()); !s.ok()) return s;
  if (request.max_tokens() < 1 || request.max_tokens() > limits.max_generate_tokens) {
    const std::string message =
        absl::StrCat("max_tokens is ", request.max_tokens(), "; it must be in [1, ",
                     limits.max_generate_tokens, "]");
    return request.max_tokens() < 1 ? absl::InvalidArgumentError(message)
                                    : absl::ResourceExhaustedError(message);
  }
  if (!(request.temperature() >= 0.0f) || std::isinf(request.temperature())) {
    return absl::InvalidArgumentError("temperature must be a finite number >= 0 (0: greedy)");
  }
  if (!(request.top_p() >= 0.0f && request.top_p() <= 1.0f)) {
    return absl::InvalidArgumentError("top_p must be in [0, 1]");
  }
  std::vector<std::string> until;
  for (int i = 0; i < request.until_size(); ++i) {
    if (request.until(i).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("until[", i, "] is empty"));
    }
    if (absl::Status s = ValidateUtf8(request.until(i), absl::StrCat("until[", i, "]")); !s.ok()) {
      return s;
    }
    until.push_back(request.until(i));
  }
  return until;
}

absl::StatusOr<GenerationPlan> PlanGeneration(const v1::GenerateRequest& request,
                                              const LoadedModel& model,
                                              std::vector<std::string> until) {
  const Tokenizer& tokenizer = *model.tokenizer;
  std::vector<int32_t> prompt;
  if (request.lm_eval()) {
    if (absl::Status s = ValidateUtf8(request.prompt(), "prompt"); !s.ok()) return s;
    absl::StatusOr<GenerateRequest> prepared = lm_eval::MakeLmEvalGenerateRequest(
        tokenizer, request.prompt(), until, request.max_tokens(),
        v1::AddsSpecialTokens(request.bos_mode()), LmEvalMaxLength(model, request.max_length()),
        lm_eval::PrefixToken(tokenizer), model.info.eos_token_id);
    if (!prepared.ok()) return prepared.status();
    prompt = std::move(prepared->prompt);
    until = prepared->stop_strings.strings();
  } else if (request.prompt_ids_size() > 0) {
    if (absl::Status s = ValidateIds(request.prompt_ids(), model.info.vocab_size, "prompt_ids");
        !s.ok()) {
      return s;
    }
    prompt.assign(request.prompt_ids().begin(), request.prompt_ids().end());
  } else {
    if (absl::Status s = ValidateUtf8(request.prompt(), "prompt"); !s.ok()) return s;
    absl::StatusOr<std::vector<int32_t>> ids = lm_eval::EncodeLmEvalText(
        tokenizer, request.prompt(), v1::AddsSpecialTokens(request.bos_mode()));
    if (!ids.ok()) return ids.status();
    prompt = *std::move(ids);
    if (prompt.empty()) return absl::InvalidArgumentError("the prompt encodes to no tokens");
  }
  const int64_t limit = model.max_sequence_tokens;
  if (static_cast<int64_t>(prompt.size()) + request.max_tokens() > limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "prompt (", prompt.size(), " tokens) + max_tokens (", request.max_tokens(),
        ") exceeds model '", request.model(), "' limit of ", limit, " tokens per sequence"));
  }
  const bool greedy = request.temperature() == 0.0f;
  GenerationPlan plan;
  plan.lm_eval = request.lm_eval();
  plan.request.prompt = std::move(prompt);
  plan.request.max_new_tokens = request.max_tokens();
  plan.request.sampling.temperature = request.temperature();
  plan.request.sampling.top_p = greedy || request.top_p() == 0.0f ? 1.0f : request.top_p();
  plan.request.sampling.seed = greedy ? 0 : request.seed();
  if (!request.ignore_eos()) {
    plan.request.stop_tokens = GenerationStopTokens(tokenizer, model.info.eos_token_id);
  }
  plan.request.stop_strings = until;
  plan.until = std::move(until);
  return plan;
}

}  // namespace hgeval::server
