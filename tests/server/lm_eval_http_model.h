// lm-evaluation-harness's `local-completions` API model with `tokenizer_backend=remote`,
// replayed in C++ against hgeval-server's HTTP door (lm_eval/models/api_models.py
// TemplateAPI, openai_completions.py LocalCompletionsAPI): the remote tokenizer's
// /tokenizer_info and /tokenize on one kept-alive session, then batched POST
// /v1/completions over token ids with echo=true, logprobs=1, max_tokens=1, spread over
// num_concurrent kept-alive connections; a request's value parsed as
// LocalCompletionsAPI.parse_logprobs does. With `max_length` (lm-eval's model_args
// max_length, A) inputs keep their last A - 1 tokens (self.max_length = A - 1) and rolling
// windows hold A - 2 tokens, as lm-eval does. Used by bench/http_lm_eval_bench and the
// tests that check the README's lm-eval arguments.
#ifndef HGEVAL_TESTS_SERVER_LM_EVAL_HTTP_MODEL_H_
#define HGEVAL_TESTS_SERVER_LM_EVAL_HTTP_MODEL_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tasks/api/language_model.h"

namespace hgeval::testing {

struct LmEvalHttpOptions {
  int port = 0;
  std::string model;      // the `model` lm-eval sends
  std::string base_path;  // "" or a model-scoped prefix such as "/models/stories"
  int batch_size = 16;
  int num_concurrent = 4;
  int max_tokens = 1;      // of the scoring calls (lm-eval sends 1 and drops it)
  int64_t max_length = 0;  // lm-eval's max_length argument; 0: no truncation, no rolling
};

class LmEvalHttpModel : public tasks::LanguageModel {
 public:
  explicit LmEvalHttpModel(LmEvalHttpOptions options) : options_(std::move(options)) {}

  absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> Loglikelihood(
      absl::Span<const tasks::LoglikelihoodRequest> requests,
      const tasks::CallOptions& call) override;
  absl::StatusOr<std::vector<tasks::RollingResult>> LoglikelihoodRolling(
      absl::Span<const tasks::RollingRequest> requests, const tasks::CallOptions& call) override;
  absl::StatusOr<std::vector<tasks::GenerateUntilResult>> GenerateUntil(
      absl::Span<const tasks::GenerateUntilRequest>, const tasks::CallOptions&) override;
  tasks::LanguageModelInfo info() const override;

  int64_t http_calls() const { return calls_; }
  double tokenize_seconds() const { return tokenize_seconds_; }
  double completions_seconds() const { return completions_seconds_; }

 private:
  struct Input {
    std::vector<int32_t> tokens;  // context + continuation, truncated
    int ctxlen = 0;
  };
  // TemplateAPI._loglikelihood_tokens over encoded inputs: (logprob, is_greedy, n_tokens).
  absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> Score(const std::vector<Input>& inputs);
  // The remote tokenizer's prefix token (bos_token, else eos_token, encoded).
  absl::StatusOr<int32_t> PrefixToken();

  const LmEvalHttpOptions options_;
  std::atomic<int64_t> calls_{0};
  double tokenize_seconds_ = 0, completions_seconds_ = 0;
};

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_LM_EVAL_HTTP_MODEL_H_
