// The model-facing side of an evaluation: lm-evaluation-harness-style requests on TEXT
// (loglikelihood, loglikelihood_rolling, generate_until). Tasks produce these requests;
// a LanguageModel answers them in-process (EngineLanguageModel) or through the service.
#ifndef HGEVAL_TASKS_API_LANGUAGE_MODEL_H_
#define HGEVAL_TASKS_API_LANGUAGE_MODEL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "tasks/api/classify_request.h"

namespace hgeval::tasks {

// log p(continuation | context). Strings are used exactly as given (the trailing-space
// move and joint tokenization happen inside the model, as in lm-eval).
struct LoglikelihoodRequest {
  std::string context;
  std::string continuation;
};

struct LoglikelihoodResult {
  double logprob = 0.0;               // sum over the continuation tokens
  bool is_greedy = false;             // every continuation token is the argmax
  int64_t n_tokens = 0;               // continuation tokens scored
  std::vector<float> token_logprobs;  // per continuation token (in-process scoring only)
};

// log p(text), conditioned on the prefix token only (lm-eval rolling windows).
struct RollingRequest {
  std::string text;
  // Score the whole text in one pass carrying the state (recurrent models; hgeval's
  // windowless perplexity) instead of lm-eval's max_length windows.
  bool windowless = false;
};

struct RollingResult {
  double logprob = 0.0;  // sum over every token of the text
  int64_t n_tokens = 0;  // tokens of the text scored
};

struct GenerateUntilRequest {
  std::string context;
  std::vector<std::string> until;  // stop strings; the output is cut before the first
  int max_gen_toks = 256;
};

struct GenerateUntilResult {
  std::string text;
  int64_t n_tokens = 0;  // tokens generated
};

// Token-level scoring for synthetic tasks (MQAR): no text and no tokenizer. `tokens` are
// fed from an empty state exactly as given (no BOS); at every position t with
// targets[t] >= 0 the model's greedy prediction after tokens[0..t] is reported.
struct TokenTargetsRequest {
  std::vector<int32_t> tokens;
  std::vector<int32_t> targets;  // tokens.size() entries; -1: position not scored
};

struct TokenTargetsResult {
  std::vector<int32_t> argmax;  // one per scored position, in order (lowest id on ties)
  double logprob = 0.0;         // sum of log p(targets[t]) over the scored positions
  int64_t n_tokens = 0;         // positions scored
};

// Sequence classification (LRA): the example's documents go through a non-causal
// classifier; its logits and predicted class come back.
struct ClassifyRequest {
  std::vector<ClassifyDocument> documents;  // one, or two for the retrieval head
};

struct ClassifyResult {
  std::vector<float> logits;
  int32_t predicted = -1;  // argmax, lowest class on ties
};

// Per call: progress reports and cooperative cancellation.
struct CallOptions {
  // Called now and then with the requests finished so far and the total.
  std::function<void(int64_t done, int64_t total)> progress;
  // Polled between batches; returning true aborts the call with a Cancelled status.
  std::function<bool()> cancelled;
};

// What produced the numbers: recorded in the results' "config".
struct LanguageModelInfo {
  std::string model;           // path or registry name
  std::string model_hash;      // content hash of the weights (may be empty)
  std::string family;          // "hgrn2", "llama", ...
  std::string tokenizer;       // path or name
  std::string tokenizer_hash;  // Tokenizer::ContentHash()
  std::string bos_regime;      // "none" (lm-eval <= 0.4.9.1) or "tokenizer" (>= 0.4.9.2)
  int64_t max_length = 0;      // lm-eval max_length (truncation / window length)
  int32_t prefix_token_id = -1;
  std::string dtype;    // "fp32", "bf16"
  std::string backend;  // "cpu", "cuda:0"
  bool context_reuse = false;
  std::string rolling_mode;  // "windows" (lm-eval) or "windowless" (state carried)
};

// Counters since construction (or the last ResetStats): what the model was asked to do.
struct LanguageModelStats {
  int64_t requests = 0;
  int64_t tokens_fed = 0;     // tokens run through Model::Forward (prefills + scoring)
  int64_t tokens_scored = 0;  // continuation tokens whose log-prob was taken
  int64_t tokens_generated = 0;
  // Requests whose continuation was longer than max_length and was cut (only when the
  // model was asked to, see EngineLanguageModelOptions::truncate_long_continuations).
  int64_t truncated_requests = 0;
  // Wall time spent outside Model::Forward creating, forking and dropping sequence states
  // (in-process scoring; what a benchmark separates from the forward passes).
  double state_seconds = 0;
};

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;

  // Results are in request order.
  virtual absl::StatusOr<std::vector<LoglikelihoodResult>> Loglikelihood(
      absl::Span<const LoglikelihoodRequest> requests, const CallOptions& options = {}) = 0;
  virtual absl::StatusOr<std::vector<RollingResult>> LoglikelihoodRolling(
      absl::Span<const RollingRequest> requests, const CallOptions& options = {}) = 0;
  virtual absl::StatusOr<std::vector<GenerateUntilResult>> GenerateUntil(
      absl::Span<const GenerateUntilRequest> requests, const CallOptions& options = {}) = 0;
  // Optional: models that only answer text requests keep this default.
  virtual absl::StatusOr<std::vector<TokenTargetsResult>> ScoreTokenTargets(
      absl::Span<const TokenTargetsRequest> requests, const CallOptions& options = {}) {
    return absl::UnimplementedError(
        "this model does not take token-level (token_targets) requests");
  }

  // Optional: only LRA classifier checkpoints answer it.
  virtual absl::StatusOr<std::vector<ClassifyResult>> Classify(
      absl::Span<const ClassifyRequest> requests, const CallOptions& options = {}) {
    return absl::UnimplementedError(
        "this model is a language model, not an LRA classifier (classify requests)");
  }

  virtual LanguageModelInfo info() const = 0;
  virtual LanguageModelStats stats() const { return {}; }
  virtual void ResetStats() {}
};

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_API_LANGUAGE_MODEL_H_
