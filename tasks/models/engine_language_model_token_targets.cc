// EngineLanguageModel::ScoreTokenTargets: token-level requests (MQAR and other synthetic
// tasks) as single forward passes from an empty state, packed into batches.
#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "tasks/models/engine_language_model.h"

namespace hgeval::tasks {
namespace {

absl::Status ValidateTokenTargets(const TokenTargetsRequest& request, size_t index,
                                  int64_t vocab_size, int64_t max_context) {
  const std::string where = absl::StrCat("token_targets request ", index, ": ");
  if (request.tokens.empty()) return absl::InvalidArgumentError(where + "no tokens");
  if (request.targets.size() != request.tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat(where, request.targets.size(), " targets for ",
                                                   request.tokens.size(), " tokens"));
  }
  if (max_context > 0 && static_cast<int64_t>(request.tokens.size()) > max_context) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, request.tokens.size(), " tokens exceed the model's context of ", max_context));
  }
  for (size_t t = 0; t < request.tokens.size(); ++t) {
    const int32_t token = request.tokens[t];
    const int32_t target = request.targets[t];
    if (token < 0 || token >= vocab_size || target < -1 || target >= vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "token ", token, " / target ", target, " at position ", t,
                       " is outside the model's vocabulary of ", vocab_size));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<TokenTargetsResult>> EngineLanguageModel::ScoreTokenTargets(
    absl::Span<const TokenTargetsRequest> requests, const CallOptions& call) {
  const ModelInfo& info = model_->info();
  for (size_t i = 0; i < requests.size(); ++i) {
    HG_RETURN_IF_ERROR(ValidateTokenTargets(requests[i], i, info.vocab_size, info.max_context));
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  std::vector<TokenTargetsResult> results(requests.size());
  const int64_t total = static_cast<int64_t>(requests.size());
  // 0: the model's own batch size (ModelInfo::batch_tokens).
  const int64_t budget = BatchTokens(*model_, options_.max_batch_tokens);
  size_t first = 0;
  while (first < requests.size()) {
    if (call.cancelled && call.cancelled()) return absl::CancelledError("cancelled");
    // Consecutive requests up to max_batch_tokens per forward call (a longer one alone).
    size_t last = first;
    int64_t batch_tokens = 0;
    while (last < requests.size()) {
      const int64_t n = static_cast<int64_t>(requests[last].tokens.size());
      if (last > first && batch_tokens + n > budget) break;
      batch_tokens += n;
      ++last;
    }
    std::vector<std::unique_ptr<SequenceState>> states(last - first);
    std::vector<ForwardItem> items(last - first);
    for (size_t i = first; i < last; ++i) {
      const TokenTargetsRequest& request = requests[i];
      const int64_t scored = std::count_if(request.targets.begin(), request.targets.end(),
                                           [](int32_t target) { return target >= 0; });
      stats_.tokens_fed += static_cast<int64_t>(request.tokens.size());
      stats_.tokens_scored += scored;
      results[i].n_tokens = scored;
      if (options_.count_only) {
        // No model run: placeholder predictions that match no label.
        results[i].argmax.assign(static_cast<size_t>(scored), -1);
        continue;
      }
      HG_ASSIGN_OR_RETURN(states[i - first], StartState(*model_, nullptr));
      items[i - first].tokens = request.tokens;
      items[i - first].targets = request.targets;
      items[i - first].state = states[i - first].get();
    }
    if (!options_.count_only) {
      std::vector<ForwardOutput> outputs(items.size());
      HG_RETURN_IF_ERROR(model_->Forward(items, absl::MakeSpan(outputs)));
      for (size_t i = first; i < last; ++i) {
        const TokenTargetsRequest& request = requests[i];
        const ForwardOutput& out = outputs[i - first];
        TokenTargetsResult& result = results[i];
        result.argmax.reserve(static_cast<size_t>(result.n_tokens));
        for (size_t t = 0; t < request.targets.size(); ++t) {
          if (request.targets[t] < 0) continue;
          result.argmax.push_back(out.argmax[t]);
          result.logprob += static_cast<double>(out.logprob[t]);
        }
      }
    }
    first = last;
    if (call.progress) call.progress(static_cast<int64_t>(first), total);
  }
  return results;
}

}  // namespace hgeval::tasks
