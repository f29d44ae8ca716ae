// LanguageModel on the in-process engine (hgeval::Model + hgeval::Tokenizer), with
// lm-evaluation-harness v0.4.x request semantics (docs/specs/lm-eval-tasks.md §2.2-2.5)
// and shared-context reuse: requests whose token sequences share a prefix run that prefix
// once and score each continuation from a forked state.
#ifndef HGEVAL_TASKS_MODELS_ENGINE_LANGUAGE_MODEL_H_
#define HGEVAL_TASKS_MODELS_ENGINE_LANGUAGE_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/lm_eval/requests.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tasks/api/language_model.h"

namespace hgeval::tasks {

// How special tokens are added when encoding request text.
enum class BosRegime {
  kNone,       // lm-eval <= 0.4.9.1: add_special_tokens=False everywhere
  kTokenizer,  // lm-eval >= 0.4.9.2: the tokenizer's own default (BOS for Llama-style)
};
std::string_view BosRegimeName(BosRegime regime);
absl::StatusOr<BosRegime> ParseBosRegime(std::string_view name);

struct EngineLanguageModelOptions {
  BosRegime bos_regime = BosRegime::kTokenizer;  // lm-eval's current default
  // lm-eval max_length; 0 resolves as lm-eval does: config max_position_embeddings,
  // else the model's max_context, else 2048.
  int64_t max_length = 0;
  // lm-eval prefix_token_id override; -1: tokenizer BOS, else EOS.
  int32_t prefix_token_id = -1;
  // Run shared token prefixes once and fork (false: every request from scratch).
  bool context_reuse = true;
  // Rolling loglikelihood over one window carrying state through the whole text (for
  // recurrent models) instead of lm-eval's max_length windows.
  bool windowless_rolling = false;
  // Upper bound on tokens per Model::Forward call; 0: the model's choice
  // (ModelInfo::batch_tokens: 4096 on the CPU, one full pack on CUDA).
  int64_t max_batch_tokens = 0;
  // A continuation longer than max_length is an error, as lm-eval asserts. When true,
  // its leading tokens move into the context instead, so only its last max_length tokens
  // are scored (a departure from lm-eval, counted in stats().truncated_requests).
  bool truncate_long_continuations = false;
  // Count tokens without running the model (results are zeros, generations empty): what
  // a run would feed (for generations, the prompts).
  bool count_only = false;
  // Bytes of the model's memory its states may take at once (held prefix states and one
  // batch's copies); 0: what the model's memory budget can give (ScoreWithPrefixReuse).
  // Results do not depend on it.
  size_t state_bytes = 0;
  // Recorded in info().
  std::string model_name;
  std::string model_hash;
  std::string tokenizer_name;
};

// The token-level form of a loglikelihood request after lm-eval's tokenization and
// truncation: fed tokens are context ++ continuation[:-1], the continuation is scored.
// The evaluator's token requests and rolling windows are lm-eval's token pairs.
using TokenizedRequest = lm_eval::TokenPair;
using RollingWindow = lm_eval::TokenPair;

class EngineLanguageModel : public LanguageModel {
 public:
  // Neither pointer is owned; both must outlive this object.
  EngineLanguageModel(Model* model, const Tokenizer* tokenizer, EngineLanguageModelOptions options);

  absl::StatusOr<std::vector<LoglikelihoodResult>> Loglikelihood(
      absl::Span<const LoglikelihoodRequest> requests, const CallOptions& options = {}) override;
  absl::StatusOr<std::vector<RollingResult>> LoglikelihoodRolling(
      absl::Span<const RollingRequest> requests, const CallOptions& options = {}) override;
  absl::StatusOr<std::vector<GenerateUntilResult>> GenerateUntil(
      absl::Span<const GenerateUntilRequest> requests, const CallOptions& options = {}) override;
  // Defined in engine_language_model_token_targets.cc.
  absl::StatusOr<std::vector<TokenTargetsResult>> ScoreTokenTargets(
      absl::Span<const TokenTargetsRequest> requests, const CallOptions& options = {}) override;

  LanguageModelInfo info() const override;
  LanguageModelStats stats() const override { return stats_; }
  void ResetStats() override { stats_ = {}; }

  // lm-eval's tokenization of one (context, continuation) pair: trailing-space move,
  // joint encoding, empty-context prefix token, left truncation to max_length + 1.
  absl::StatusOr<TokenizedRequest> Tokenize(const LoglikelihoodRequest& request,
                                            bool* truncated = nullptr) const;
  // Encodes request text under the BOS regime (lm-eval tok_encode).
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text) const;

  // Called during ScoreTokens, after each Forward batch, with the indices of the distinct
  // requests that batch finished (their results in `results` final); an error stops the
  // call. Identical requests are reported once, by their first index.
  using RequestsFinished = std::function<absl::Status(
      absl::Span<const size_t> finished, absl::Span<const LoglikelihoodResult> results)>;

  // Scores token requests (reuse or from scratch per options) through the one scorer,
  // ScoreWithPrefixReuse (engine/runtime/prefix_scoring.h). Server jobs pass
  // `finished` to store results as soon as they exist (a killed job loses one batch).
  absl::StatusOr<std::vector<LoglikelihoodResult>> ScoreTokens(
      absl::Span<const TokenizedRequest> requests, const CallOptions& options = {},
      const RequestsFinished& finished = nullptr);

  int64_t max_length() const { return max_length_; }
  int32_t prefix_token_id() const { return prefix_token_id_; }

 private:
  Model* model_;
  const Tokenizer* tokenizer_;
  EngineLanguageModelOptions options_;
  int64_t max_length_ = 2048;
  int32_t prefix_token_id_ = -1;
  LanguageModelStats stats_;
};

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_MODELS_ENGINE_LANGUAGE_MODEL_H_
