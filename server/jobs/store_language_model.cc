#include "server/jobs/store_language_model.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/lm_eval/requests.h"
#include "engine/runtime/generation.h"
#include "engine/util/parallel_for.h"
#include "server/core/request_prep.h"
#include "server/store/stored_results.h"
#include "tasks/models/engine_language_model.h"

namespace hgeval::server {

StoreLanguageModel::StoreLanguageModel(LoadedModel* model, Executor* executor,
                                       StoreLanguageModelOptions options)
    : model_(model), executor_(executor), options_(std::move(options)) {
  max_length_ = LmEvalMaxLength(*model_, options_.max_length);
}

CallControl StoreLanguageModel::Control(const tasks::CallOptions& options) const {
  CallControl control;
  auto job_cancelled = options_.cancelled;
  auto call_cancelled = options.cancelled;
  control.cancelled = [job_cancelled, call_cancelled] {
    return (job_cancelled && job_cancelled()) || (call_cancelled && call_cancelled());
  };
  return control;
}

absl::StatusOr<std::vector<PairScore>> StoreLanguageModel::ScoreChunked(
    const std::vector<TokenPair>& pairs, const tasks::CallOptions& options,
    const std::function<void(int64_t)>& done, int top_k) {
  std::vector<PairScore> results;
  results.reserve(pairs.size());
  const CallControl control = Control(options);
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, options_.chunk_requests));
  for (size_t start = 0; start < pairs.size(); start += chunk) {
    const std::vector<TokenPair> part(pairs.begin() + start,
                                      pairs.begin() + std::min(pairs.size(), start + chunk));
    absl::StatusOr<ScoreOutcome> outcome;
    for (;;) {
      outcome = executor_->ScorePairs(*model_, part, top_k, /*use_store=*/true, control);
      // A full queue is backpressure, not failure: wait and retry.
      if (!IsQueueFull(outcome.status())) break;
      if (control.cancelled()) return absl::CancelledError("job cancelled");
      absl::SleepFor(absl::Milliseconds(50));
    }
    if (!outcome.ok()) return outcome.status();
    cached_ += outcome->cached;
    computed_ += outcome->computed;
    store_seconds_ += outcome->store_seconds;
    for (PairScore& r : outcome->results) {
      stats_.tokens_scored += r.continuation_tokens;
      if (!r.cached) stats_.tokens_fed += r.context_tokens + r.continuation_tokens - 1;
      results.push_back(std::move(r));
    }
    if (done) done(static_cast<int64_t>(part.size()));
  }
  return results;
}

absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> StoreLanguageModel::Loglikelihood(
    absl::Span<const tasks::LoglikelihoodRequest> requests, const tasks::CallOptions& options) {
  PairLimits limits;
  limits.vocab_size = model_->info.vocab_size;
  limits.max_length = max_length_;
  limits.truncate = true;
  limits.model_name = model_->spec.name;
  // Tokenizing is pure per request: spread it over the cores, as the evaluator does.
  const absl::Time prepare_start = absl::Now();
  std::vector<absl::StatusOr<TokenPair>> prepared(requests.size(), absl::UnknownError("unset"));
  ParallelFor(requests.size(), [&](size_t i) {
    PairInput pair;
    pair.context = requests[i].context;
    pair.continuation = requests[i].continuation;
    prepared[i] =
        PreparePair(pair, static_cast<int>(i), *model_->tokenizer, options_.add_special, limits);
  });
  std::vector<TokenPair> pairs;
  pairs.reserve(requests.size());
  for (absl::StatusOr<TokenPair>& p : prepared) {
    if (!p.ok()) return p.status();
    pairs.push_back(*std::move(p));
  }
  prepare_seconds_ += absl::ToDoubleSeconds(absl::Now() - prepare_start);
  // Progress counts what a killed job keeps: requests the store answers at once, then
  // computed ones as their results are stored (on the store writer's thread).
  const int64_t total = static_cast<int64_t>(pairs.size());
  std::atomic<int64_t> kept{0};
  CallControl control = Control(options);
  control.pairs_kept = [&](int64_t n) {
    const int64_t now = kept.fetch_add(n) + n;
    if (options.progress) options.progress(std::min(now, total), total);
  };
  // Loglikelihood requests are scored with context reuse on the model's scheduler (a
  // context is fed once and its choices fork from its state), as hgeval-eval scores them.
  const PairScorer scorer = [&](const std::vector<TokenPair>& missing, int,
                                std::vector<ScoreResult>* results, const FinishedPairs& finished) {
    control.pairs_kept(total - static_cast<int64_t>(missing.size()));
    int64_t fed = 0;
    absl::Status scored =
        ScoreWithReuseOnScheduler(*model_, missing, control, results, finished, &fed);
    stats_.tokens_fed += fed;
    return scored;
  };
  absl::StatusOr<ScoreOutcome> outcome =
      executor_->ScorePairs(*model_, pairs, /*top_k=*/0, /*use_store=*/true, control, scorer);
  if (!outcome.ok()) return outcome.status();
  cached_ += outcome->cached;
  computed_ += outcome->computed;
  store_seconds_ += outcome->store_seconds;
  if (options.progress) options.progress(total, total);
  std::vector<tasks::LoglikelihoodResult> out(outcome->results.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const PairScore& r = outcome->results[i];
    out[i].logprob = r.score.logprob;
    out[i].is_greedy = r.score.is_greedy;
    out[i].n_tokens = r.continuation_tokens;
    stats_.tokens_scored += r.continuation_tokens;
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  return out;
}

absl::StatusOr<std::vector<tasks::RollingResult>> StoreLanguageModel::LoglikelihoodRolling(
    absl::Span<const tasks::RollingRequest> requests, const tasks::CallOptions& options) {
  const int32_t prefix = lm_eval::PrefixToken(*model_->tokenizer);
  if (prefix < 0) {
    return absl::FailedPreconditionError("the tokenizer has no BOS/EOS prefix token");
  }
  std::vector<TokenPair> windows;
  std::vector<size_t> first, count;
  for (const tasks::RollingRequest& r : requests) {
    // lm-eval's tok_encode(text): special tokens as the regime says (spec 2.2).
    absl::StatusOr<std::vector<int32_t>> ids =
        lm_eval::EncodeLmEvalText(*model_->tokenizer, r.text, options_.add_special);
    if (!ids.ok()) return ids.status();
    // Windowless: one pass over the whole text carrying the state (recurrent models).
    std::vector<TokenPair> w =
        r.windowless ? (ids->empty() ? std::vector<TokenPair>{}
                                     : std::vector<TokenPair>{TokenPair{{prefix}, *ids}})
                     : lm_eval::MakeRollingWindows(*ids, prefix, max_length_);
    first.push_back(windows.size());
    count.push_back(w.size());
    for (TokenPair& p : w) windows.push_back(std::move(p));
  }
  // Progress counts requests (texts), finished when their last window is.
  int64_t windows_done = 0;
  const int64_t total = static_cast<int64_t>(requests.size());
  absl::StatusOr<std::vector<PairScore>> scored = ScoreChunked(windows, options, [&](int64_t n) {
    windows_done += n;
    int64_t texts_done = 0;
    for (size_t i = 0; i < first.size(); ++i) {
      if (static_cast<int64_t>(first[i] + count[i]) <= windows_done) ++texts_done;
    }
    if (options.progress) options.progress(texts_done, total);
  });
  if (!scored.ok()) return scored.status();
  std::vector<tasks::RollingResult> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    for (size_t w = first[i]; w < first[i] + count[i]; ++w) {
      out[i].logprob += (*scored)[w].score.logprob;
      out[i].n_tokens += (*scored)[w].continuation_tokens;
    }
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  return out;
}

absl::StatusOr<std::vector<tasks::GenerateUntilResult>> StoreLanguageModel::GenerateUntil(
    absl::Span<const tasks::GenerateUntilRequest> requests, const tasks::CallOptions& options) {
  const CallControl control = Control(options);
  const Tokenizer& tokenizer = *model_->tokenizer;
  ResultStore* store = executor_->store();
  std::vector<tasks::GenerateUntilResult> out(requests.size());
  const size_t chunk = 64;
  int64_t done = 0;
  for (size_t start = 0; start < requests.size(); start += chunk) {
    const size_t end = std::min(requests.size(), start + chunk);
    std::vector<StoreKey> keys;
    std::vector<std::shared_ptr<GenerateWork>> works(end - start);
    // Long documents: their prompts are tokenized over the cores.
    std::vector<absl::StatusOr<GenerateRequest>> made(end - start, absl::UnknownError("unset"));
    ParallelFor(
        end - start,
        [&](size_t k) {
          const tasks::GenerateUntilRequest& r = requests[start + k];
          made[k] = lm_eval::MakeLmEvalGenerateRequest(
              tokenizer, r.context, r.until, r.max_gen_toks, options_.add_special, max_length_,
              lm_eval::PrefixToken(tokenizer), model_->info.eos_token_id);
        },
        /*slice=*/4);
    for (size_t i = start; i < end; ++i) {
      absl::StatusOr<GenerateRequest>& prepared = made[i - start];
      if (!prepared.ok()) return prepared.status();
      keys.push_back(StoreKey{model_->model_hash, model_->tokenizer_hash, "generate",
                              GenerateDigest(prepared->prompt, prepared->max_new_tokens,
                                             prepared->stop_strings.strings(), 0.0f, 1.0f, 0, false,
                                             /*lm_eval_text=*/true)});
      auto work = std::make_shared<GenerateWork>();
      work->request = *std::move(prepared);
      works[i - start] = std::move(work);
    }
    std::vector<Generation> stored;
    absl::StatusOr<std::vector<bool>> found = LookUpStored(store, keys, &stored);
    if (!found.ok()) return found.status();
    // Identical requests of a chunk (SCROLLS docs can share an input) are generated once.
    std::vector<int64_t> same_as(works.size(), -1);
    absl::flat_hash_map<std::string, size_t> first;
    for (size_t k = 0; k < works.size(); ++k) {
      auto [it, inserted] = first.emplace(keys[k].request_digest, k);
      if (!inserted) {
        same_as[k] = static_cast<int64_t>(it->second);
        works[k] = nullptr;
      }
    }
    for (size_t k = 0; k < works.size(); ++k) {
      if (same_as[k] >= 0) continue;
      if ((*found)[k]) {
        out[start + k].text = stored[k].text;
        out[start + k].n_tokens = static_cast<int64_t>(stored[k].token_ids.size());
        works[k] = nullptr;
        ++cached_;
        continue;
      }
      for (;;) {
        absl::Status s = model_->scheduler->Submit(works[k]);
        if (s.ok()) break;
        if (!IsQueueFull(s)) return s;
        if (control.cancelled()) return absl::CancelledError("job cancelled");
        absl::SleepFor(absl::Milliseconds(50));
      }
    }
    std::vector<std::pair<StoreKey, std::string>> to_store;
    for (size_t k = 0; k < works.size(); ++k) {
      if (works[k] == nullptr) continue;
      if (absl::Status s = WaitDone(works[k]->mu, works[k]->done, control); !s.ok()) {
        for (auto& w : works) {
          if (w) w->cancelled = true;
        }
        return s;
      }
      absl::MutexLock lock(&works[k]->mu);
      if (!works[k]->status.ok()) return works[k]->status;
      absl::StatusOr<std::string> text = lm_eval::LmEvalContinuationText(
          tokenizer, works[k]->result.tokens, works[k]->request.stop_strings);
      if (!text.ok()) return text.status();
      std::string cut = *std::move(text);
      out[start + k].text = cut;
      out[start + k].n_tokens = static_cast<int64_t>(works[k]->result.tokens.size());
      stats_.tokens_generated += out[start + k].n_tokens;
      ++computed_;
      Generation whole;
      whole.text = cut;
      whole.token_ids = works[k]->result.tokens;
      whole.finish_reason = works[k]->result.finish_reason;
      whole.prompt_tokens = static_cast<int32_t>(works[k]->request.prompt.size());
      to_store.emplace_back(keys[k], EncodeStored(whole));
    }
    for (size_t k = 0; k < works.size(); ++k) {
      if (same_as[k] >= 0) out[start + k] = out[start + same_as[k]];
    }
    if (store != nullptr) {
      if (absl::Status s = store->PutMany(to_store); !s.ok()) return s;
    }
    done += static_cast<int64_t>(end - start);
    if (options.progress) options.progress(done, static_cast<int64_t>(requests.size()));
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  return out;
}

tasks::LanguageModelInfo StoreLanguageModel::info() const {
  tasks::LanguageModelInfo info;
  info.model = model_->spec.name;
  info.model_hash = model_->model_hash;
  info.family = std::string(ModelFamilyName(model_->info.family));
  info.tokenizer = std::string(model_->tokenizer->kind());
  info.tokenizer_hash = model_->tokenizer_hash;
  info.bos_regime = std::string(tasks::BosRegimeName(
      options_.add_special ? tasks::BosRegime::kTokenizer : tasks::BosRegime::kNone));
  info.max_length = max_length_;
  info.prefix_token_id = lm_eval::PrefixToken(*model_->tokenizer);
  info.dtype = model_->info.dtype;
  info.backend = model_->info.backend;
  info.context_reuse = true;  // loglikelihood requests (see the header)
  info.rolling_mode = "windows";
  return info;
}

absl::StatusOr<std::vector<tasks::TokenTargetsResult>> StoreLanguageModel::ScoreTokenTargets(
    absl::Span<const tasks::TokenTargetsRequest> requests, const tasks::CallOptions& options) {
  const int64_t vocab = model_->info.vocab_size;
  const int64_t max_context = model_->info.max_context;
  // The scheduler scores (context, continuation) pairs: context = tokens[0] and
  // continuation = tokens[1:] plus a placeholder feed exactly `tokens` and score every
  // position; the top-1 alternative at position t is the argmax after tokens[0..t].
  std::vector<TokenPair> pairs;
  pairs.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const tasks::TokenTargetsRequest& r = requests[i];
    const std::string where = absl::StrCat("token_targets request ", i, ": ");
    if (r.tokens.empty() || r.targets.size() != r.tokens.size()) {
      return absl::InvalidArgumentError(where + "needs tokens and one target per token");
    }
    if (max_context > 0 && static_cast<int64_t>(r.tokens.size()) > max_context) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, r.tokens.size(), " tokens exceed the model's context of ", max_context));
    }
    for (size_t t = 0; t < r.tokens.size(); ++t) {
      if (r.tokens[t] < 0 || r.tokens[t] >= vocab || r.targets[t] < -1 || r.targets[t] >= vocab) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "token ", r.tokens[t], " / target ", r.targets[t], " at position ",
                         t, " is outside the model's vocabulary of ", vocab));
      }
    }
    TokenPair pair;
    pair.context = {r.tokens[0]};
    pair.continuation.assign(r.tokens.begin() + 1, r.tokens.end());
    pair.continuation.push_back(0);  // placeholder: scored, never fed
    pairs.push_back(std::move(pair));
  }
  int64_t done = 0;
  const int64_t total = static_cast<int64_t>(pairs.size());
  absl::StatusOr<std::vector<PairScore>> scored = ScoreChunked(
      pairs, options,
      [&](int64_t n) {
        done += n;
        if (options.progress) options.progress(done, total);
      },
      /*top_k=*/1);
  if (!scored.ok()) return scored.status();
  std::vector<tasks::TokenTargetsResult> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::vector<std::vector<TokenLogprob>>& top_k = (*scored)[i].score.top_k;
    const std::vector<int32_t>& targets = requests[i].targets;
    if (top_k.size() != targets.size()) {
      return absl::InternalError(absl::StrCat("token_targets request ", i, ": ", top_k.size(),
                                              " top-k rows for ", targets.size(), " positions"));
    }
    out[i].logprob = std::numeric_limits<double>::quiet_NaN();
    for (size_t t = 0; t < targets.size(); ++t) {
      if (targets[t] < 0) continue;
      if (top_k[t].empty()) return absl::InternalError("token_targets: empty top-k row");
      out[i].argmax.push_back(top_k[t][0].token);
      ++out[i].n_tokens;
    }
  }
  stats_.requests += static_cast<int64_t>(requests.size());
  return out;
}

}  // namespace hgeval::server
