#include "tasks/models/engine_language_model.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/lm_eval/requests.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/prefix_scoring.h"
#include "engine/util/parallel_for.h"
#include "engine/util/status_macros.h"
#include "metrics/text_counts.h"

namespace hgeval::tasks {

std::string_view BosRegimeName(BosRegime regime) {
  return regime == BosRegime::kNone ? "none" : "tokenizer";
}

absl::StatusOr<BosRegime> ParseBosRegime(std::string_view name) {
  if (name == "none") return BosRegime::kNone;
  if (name == "tokenizer") return BosRegime::kTokenizer;
  return absl::InvalidArgumentError(absl::StrCat(
      "BOS regime must be \"none\" or \"tokenizer\", got \"", std::string(name), "\""));
}

EngineLanguageModel::EngineLanguageModel(Model* model, const Tokenizer* tokenizer,
                                         EngineLanguageModelOptions options)
    : model_(model), tokenizer_(tokenizer), options_(std::move(options)) {
  max_length_ = lm_eval::MaxLength(options_.max_length, model_->config().max_position_embeddings,
                                   model_->info().max_context);
  prefix_token_id_ =
      options_.prefix_token_id >= 0 ? options_.prefix_token_id : lm_eval::PrefixToken(*tokenizer_);
}

LanguageModelInfo EngineLanguageModel::info() const {
  LanguageModelInfo info;
  info.model = options_.model_name;
  info.model_hash = options_.model_hash;
  info.family = std::string(ModelFamilyName(model_->config().family));
  info.tokenizer = options_.tokenizer_name;
  info.tokenizer_hash = tokenizer_->ContentHash();
  info.bos_regime = std::string(BosRegimeName(options_.bos_regime));
  info.max_length = max_length_;
  info.prefix_token_id = prefix_token_id_;
  info.dtype = model_->info().dtype;
  info.backend = model_->info().backend;
  info.context_reuse = options_.context_reuse;
  info.rolling_mode = options_.windowless_rolling ? "windowless" : "windows";
  return info;
}

absl::StatusOr<std::vector<int32_t>> EngineLanguageModel::Encode(std::string_view text) const {
  return lm_eval::EncodeLmEvalText(*tokenizer_, text, options_.bos_regime == BosRegime::kTokenizer);
}

absl::StatusOr<TokenizedRequest> EngineLanguageModel::Tokenize(const LoglikelihoodRequest& request,
                                                               bool* truncated) const {
  if (truncated != nullptr) *truncated = false;
  HG_ASSIGN_OR_RETURN(
      TokenizedRequest out,
      lm_eval::EncodeLmEvalPair(*tokenizer_, request.context, request.continuation,
                                options_.bos_regime == BosRegime::kTokenizer, prefix_token_id_));
  if (static_cast<int64_t>(out.continuation.size()) > max_length_ &&
      options_.truncate_long_continuations) {
    const size_t excess = out.continuation.size() - static_cast<size_t>(max_length_);
    out.context.insert(out.context.end(), out.continuation.begin(),
                       out.continuation.begin() + excess);
    out.continuation.erase(out.continuation.begin(), out.continuation.begin() + excess);
    if (truncated != nullptr) *truncated = true;
  }
  if (static_cast<int64_t>(out.continuation.size()) > max_length_) {
    return absl::InvalidArgumentError(
        absl::StrCat("continuation of ", out.continuation.size(),
                     " tokens is longer than max_length ", max_length_,
                     " (lm-eval asserts here too; hgeval-eval --truncate_long_continuations "
                     "scores its last max_length tokens)"));
  }
  lm_eval::TruncateLmEvalPair(max_length_, &out);
  return out;
}

absl::StatusOr<std::vector<LoglikelihoodResult>> EngineLanguageModel::ScoreTokens(
    absl::Span<const TokenizedRequest> requests, const CallOptions& call,
    const RequestsFinished& finished) {
  for (const auto& r : requests) {
    if (r.context.empty() || r.continuation.empty()) {
      return absl::InvalidArgumentError("token request with an empty context or continuation");
    }
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  std::vector<ScoreRequest> score(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    score[i].context = requests[i].context;
    score[i].continuation = requests[i].continuation;
  }
  auto to_result = [](const ScoreResult& r) {
    LoglikelihoodResult out;
    out.logprob = r.logprob;
    out.is_greedy = r.is_greedy;
    out.n_tokens = static_cast<int64_t>(r.token_logprobs.size());
    out.token_logprobs = r.token_logprobs;
    return out;
  };
  std::vector<LoglikelihoodResult> results(requests.size());
  PrefixScoreOptions options;
  options.context_reuse = options_.context_reuse;
  options.max_batch_tokens = options_.max_batch_tokens;
  options.state_bytes = options_.state_bytes;
  options.count_only = options_.count_only;
  options.cancelled = call.cancelled;
  options.progress = call.progress;
  if (finished) {
    options.finished = [&](absl::Span<const size_t> done,
                           absl::Span<const ScoreResult> scored) -> absl::Status {
      for (size_t k : done) results[k] = to_result(scored[k]);
      return finished(done, results);
    };
  }
  PrefixScoreStats stats;
  absl::StatusOr<std::vector<ScoreResult>> scored =
      ScoreWithPrefixReuse(*model_, score, options, &stats);
  stats_.tokens_fed += stats.tokens_fed;
  stats_.tokens_scored += stats.tokens_scored;
  stats_.state_seconds += stats.state_seconds;
  if (!scored.ok()) return scored.status();
  for (size_t i = 0; i < requests.size(); ++i) results[i] = to_result((*scored)[i]);
  return results;
}

absl::StatusOr<std::vector<LoglikelihoodResult>> EngineLanguageModel::Loglikelihood(
    absl::Span<const LoglikelihoodRequest> requests, const CallOptions& call) {
  // Tokenizing is pure per request (tokenizers are thread-safe), and on a GPU it is a
  // large share of a suite's host time: spread it over the cores, in fixed slices so
  // the result does not depend on scheduling.
  const size_t n = requests.size();
  std::vector<absl::StatusOr<TokenizedRequest>> tokenized(n, absl::UnknownError("unset"));
  std::vector<char> truncated(n, 0);
  ParallelFor(n, [&](size_t i) {
    bool cut = false;
    tokenized[i] = Tokenize(requests[i], &cut);
    truncated[i] = cut ? 1 : 0;
  });
  std::vector<TokenizedRequest> ready;
  ready.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!tokenized[i].ok()) return tokenized[i].status();
    stats_.truncated_requests += truncated[i];
    ready.push_back(*std::move(tokenized[i]));
  }
  return ScoreTokens(ready, call);
}

absl::StatusOr<std::vector<RollingResult>> EngineLanguageModel::LoglikelihoodRolling(
    absl::Span<const RollingRequest> requests, const CallOptions& call) {
  std::vector<TokenizedRequest> windows;
  std::vector<size_t> owner;
  std::vector<RollingResult> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    HG_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, Encode(requests[i].text));
    results[i].n_tokens = static_cast<int64_t>(tokens.size());
    if (tokens.empty()) continue;
    if (options_.windowless_rolling || requests[i].windowless) {
      if (model_->info().max_context > 0 &&
          static_cast<int64_t>(tokens.size()) > model_->info().max_context) {
        return absl::InvalidArgumentError(absl::StrCat("windowless rolling needs ", tokens.size(),
                                                       " positions; the model accepts ",
                                                       model_->info().max_context));
      }
      windows.push_back({{prefix_token_id_}, std::move(tokens)});
      owner.push_back(i);
      continue;
    }
    for (auto& w : lm_eval::MakeRollingWindows(tokens, prefix_token_id_, max_length_)) {
      windows.push_back({std::move(w.context), std::move(w.continuation)});
      owner.push_back(i);
    }
  }
  CallOptions window_call = call;
  if (call.progress) {
    // Report texts finished rather than windows.
    window_call.progress = [&call, &requests](int64_t done, int64_t total) {
      call.progress(total == 0 ? 0 : done * static_cast<int64_t>(requests.size()) / total,
                    static_cast<int64_t>(requests.size()));
    };
  }
  HG_ASSIGN_OR_RETURN(auto window_results, ScoreTokens(windows, window_call));
  // Python sums the windows of a text in order.
  for (size_t w = 0; w < windows.size(); ++w) {
    results[owner[w]].logprob += window_results[w].logprob;
  }
  return results;
}

absl::StatusOr<std::vector<GenerateUntilResult>> EngineLanguageModel::GenerateUntil(
    absl::Span<const GenerateUntilRequest> requests, const CallOptions& call) {
  // Long documents (SCROLLS) make tokenizing the prompts a large share of the host's
  // work: spread it over the cores, a few requests per slice.
  std::vector<absl::StatusOr<GenerateRequest>> made(requests.size(), absl::UnknownError("unset"));
  ParallelFor(
      requests.size(),
      [&](size_t i) {
        const GenerateUntilRequest& r = requests[i];
        made[i] = lm_eval::MakeLmEvalGenerateRequest(
            *tokenizer_, r.context, r.until, r.max_gen_toks,
            options_.bos_regime == BosRegime::kTokenizer, max_length_, prefix_token_id_,
            model_->info().eos_token_id);
      },
      /*slice=*/4);
  std::vector<GenerateRequest> prepared;
  prepared.reserve(requests.size());
  for (absl::StatusOr<GenerateRequest>& request : made) {
    if (!request.ok()) return request.status();
    prepared.push_back(*std::move(request));
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  if (options_.count_only) {
    // What a run would feed first (the prompts); nothing is generated.
    for (const GenerateRequest& request : prepared) {
      stats_.tokens_fed += static_cast<int64_t>(request.prompt.size());
    }
    return std::vector<GenerateUntilResult>(requests.size());
  }
  GenerateOptions generate;
  generate.decode.max_batch_tokens = BatchTokens(*model_, options_.max_batch_tokens);
  generate.cancelled = call.cancelled;
  generate.progress = call.progress;
  HG_ASSIGN_OR_RETURN(std::vector<GenerateResult> generated,
                      Generate(*model_, tokenizer_, prepared, generate));
  std::vector<GenerateUntilResult> results(requests.size());
  for (size_t i = 0; i < generated.size(); ++i) {
    HG_ASSIGN_OR_RETURN(results[i].text,
                        lm_eval::LmEvalContinuationText(*tokenizer_, generated[i].tokens,
                                                        prepared[i].stop_strings));
    results[i].n_tokens = static_cast<int64_t>(generated[i].tokens.size());
    stats_.tokens_fed += generated[i].tokens_fed;
    stats_.tokens_generated += results[i].n_tokens;
  }
  return results;
}

}  // namespace hgeval::tasks
