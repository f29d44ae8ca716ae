#include "client/remote_language_model.h"

#include <algorithm>
#include <future>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "proto/hgeval/v1/bos_mode.h"
#include "tasks/models/engine_language_model.h"

namespace hgeval::client {
namespace v1 = ::hgeval::v1;
namespace {

// Retries `call` while it fails with UNAVAILABLE, up to `retry_for`.
template <typename T, typename F>
absl::StatusOr<T> WithRetry(absl::Duration retry_for, const F& call) {
  const absl::Time end = absl::Now() + retry_for;
  for (;;) {
    absl::StatusOr<T> result = call();
    if (result.ok() || result.status().code() != absl::StatusCode::kUnavailable ||
        absl::Now() > end) {
      return result;
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteLanguageModel>> RemoteLanguageModel::Create(
    Client* client, RemoteLanguageModelOptions options) {
  std::unique_ptr<RemoteLanguageModel> lm(new RemoteLanguageModel(client, options));
  // Make sure the model is there (loaded) and learn what it is. Servers behind one target
  // are replicas serving the same models; the results record the model hash they report.
  v1::TokenizeRequest probe;
  probe.set_model(options.model);
  probe.set_text("a");
  absl::StatusOr<v1::TokenizeResponse> ok = client->Tokenize(probe);
  // A model without a tokenizer (token-level requests only) refuses text but is there.
  if (!ok.ok() && ok.status().code() != absl::StatusCode::kFailedPrecondition) {
    return ok.status();
  }
  absl::StatusOr<v1::ListModelsResponse> models = client->ListModels();
  if (!models.ok()) return models.status();
  const v1::ModelInfo* info = nullptr;
  for (const auto& m : models->models()) {
    if (m.name() == options.model && m.loaded()) info = &m;
  }
  if (info == nullptr) {
    // Loads on first use: ask once to load it, then describe.
    v1::LoglikelihoodRequest warm;
    warm.set_model(options.model);
    // Token ids, which every model takes (one without a tokenizer refuses text).
    warm.add_pairs()->add_context_ids(0);
    warm.mutable_pairs(0)->add_continuation_ids(0);
    grpc::ClientContext context;
    client->Prepare(context);
    v1::LoglikelihoodResponse ignored;
    grpc::Status st = client->models().Loglikelihood(&context, warm, &ignored);
    if (!st.ok()) return FromGrpc(st);
    models = client->ListModels();
    if (!models.ok()) return models.status();
    for (const auto& m : models->models()) {
      if (m.name() == options.model) info = &m;
    }
  }
  if (info == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("model '", options.model, "' not on ", client->target()));
  }
  lm->info_.model = info->name();
  lm->info_.model_hash = info->model_hash();
  lm->info_.family = info->family();
  lm->info_.tokenizer = info->tokenizer_kind();
  lm->info_.tokenizer_hash = info->tokenizer_hash();
  lm->info_.max_length = options.max_length > 0 ? options.max_length : info->lm_eval_max_length();
  lm->info_.prefix_token_id =
      info->bos_token_id() >= 0 ? info->bos_token_id() : info->eos_token_id();
  lm->info_.dtype = info->dtype();
  lm->info_.backend = info->backend();
  lm->info_.bos_regime = std::string(tasks::BosRegimeName(v1::AddsSpecialTokens(options.bos_mode)
                                                              ? tasks::BosRegime::kTokenizer
                                                              : tasks::BosRegime::kNone));
  lm->info_.context_reuse = false;
  lm->info_.rolling_mode = "windows";
  lm->options_.max_length = lm->info_.max_length;
  return lm;
}

absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> RemoteLanguageModel::Loglikelihood(
    absl::Span<const tasks::LoglikelihoodRequest> requests, const tasks::CallOptions& options) {
  std::vector<tasks::LoglikelihoodResult> out;
  out.reserve(requests.size());
  const size_t block = static_cast<size_t>(options_.chunk_per_server) *
                       static_cast<size_t>(client_->parallel_calls());
  for (size_t start = 0; start < requests.size(); start += block) {
    if (options.cancelled && options.cancelled()) return absl::CancelledError("cancelled");
    v1::LoglikelihoodRequest request;
    request.set_model(options_.model);
    request.set_bos_mode(options_.bos_mode);
    request.set_truncate(true);
    request.set_max_length(static_cast<int32_t>(options_.max_length));
    for (size_t i = start; i < std::min(requests.size(), start + block); ++i) {
      v1::LoglikelihoodPair* pair = request.add_pairs();
      pair->set_context(requests[i].context);
      pair->set_continuation(requests[i].continuation);
    }
    absl::StatusOr<v1::LoglikelihoodResponse> response = WithRetry<v1::LoglikelihoodResponse>(
        options_.retry_for, [&] { return client_->Loglikelihood(request); });
    if (!response.ok()) return response.status();
    for (const auto& r : response->results()) {
      tasks::LoglikelihoodResult result;
      result.logprob = r.logprob();
      result.is_greedy = r.is_greedy();
      result.n_tokens = r.continuation_tokens();
      cached_ += r.cached();
      out.push_back(result);
    }
    if (options.progress) {
      options.progress(static_cast<int64_t>(out.size()), static_cast<int64_t>(requests.size()));
    }
  }
  return out;
}

absl::StatusOr<std::vector<tasks::RollingResult>> RemoteLanguageModel::LoglikelihoodRolling(
    absl::Span<const tasks::RollingRequest> requests, const tasks::CallOptions& options) {
  for (const tasks::RollingRequest& r : requests) {
    if (r.windowless) {
      return absl::UnimplementedError(
          "windowless rolling log-likelihood is not in the wire contract; run the task as a "
          "server job (one --server) instead");
    }
  }
  std::vector<tasks::RollingResult> out;
  const size_t block = 4 * static_cast<size_t>(client_->parallel_calls());
  for (size_t start = 0; start < requests.size(); start += block) {
    if (options.cancelled && options.cancelled()) return absl::CancelledError("cancelled");
    v1::LoglikelihoodRollingRequest request;
    request.set_model(options_.model);
    request.set_max_length(static_cast<int32_t>(options_.max_length));
    request.set_bos_mode(options_.bos_mode);
    for (size_t i = start; i < std::min(requests.size(), start + block); ++i) {
      request.add_inputs()->set_text(requests[i].text);
    }
    absl::StatusOr<v1::LoglikelihoodRollingResponse> response =
        WithRetry<v1::LoglikelihoodRollingResponse>(
            options_.retry_for, [&] { return client_->LoglikelihoodRolling(request); });
    if (!response.ok()) return response.status();
    for (const auto& r : response->results()) {
      out.push_back({r.logprob(), r.tokens()});
      cached_ += r.cached();
    }
    if (options.progress) {
      options.progress(static_cast<int64_t>(out.size()), static_cast<int64_t>(requests.size()));
    }
  }
  return out;
}

absl::StatusOr<std::vector<tasks::GenerateUntilResult>> RemoteLanguageModel::GenerateUntil(
    absl::Span<const tasks::GenerateUntilRequest> requests, const tasks::CallOptions& options) {
  std::vector<tasks::GenerateUntilResult> out(requests.size());
  const size_t parallel = 16;
  for (size_t start = 0; start < requests.size(); start += parallel) {
    if (options.cancelled && options.cancelled()) return absl::CancelledError("cancelled");
    std::vector<std::future<absl::StatusOr<v1::GenerateResponse>>> futures;
    for (size_t i = start; i < std::min(requests.size(), start + parallel); ++i) {
      v1::GenerateRequest request;
      request.set_model(options_.model);
      request.set_prompt(requests[i].context);
      request.set_bos_mode(options_.bos_mode);
      request.set_max_tokens(requests[i].max_gen_toks);
      for (const std::string& u : requests[i].until) request.add_until(u);
      // The server prepares it as the evaluator and jobs do (prompt cut, EOS text).
      request.set_lm_eval(true);
      request.set_max_length(static_cast<int32_t>(options_.max_length));
      futures.push_back(std::async(std::launch::async, [this, request] {
        return WithRetry<v1::GenerateResponse>(options_.retry_for,
                                               [&] { return client_->Generate(request); });
      }));
    }
    for (size_t k = 0; k < futures.size(); ++k) {
      absl::StatusOr<v1::GenerateResponse> r = futures[k].get();
      if (!r.ok()) return r.status();
      out[start + k].text = r->text();
      out[start + k].n_tokens = r->generated_tokens();
    }
    if (options.progress) {
      options.progress(static_cast<int64_t>(std::min(requests.size(), start + parallel)),
                       static_cast<int64_t>(requests.size()));
    }
  }
  return out;
}

absl::StatusOr<std::vector<tasks::TokenTargetsResult>> RemoteLanguageModel::ScoreTokenTargets(
    absl::Span<const tasks::TokenTargetsRequest> requests, const tasks::CallOptions& options) {
  std::vector<tasks::TokenTargetsResult> out;
  out.reserve(requests.size());
  const size_t block = static_cast<size_t>(options_.chunk_per_server) *
                       static_cast<size_t>(client_->parallel_calls());
  for (size_t start = 0; start < requests.size(); start += block) {
    if (options.cancelled && options.cancelled()) return absl::CancelledError("cancelled");
    const size_t end = std::min(requests.size(), start + block);
    v1::LoglikelihoodRequest request;
    request.set_model(options_.model);
    request.set_top_k(1);
    for (size_t i = start; i < end; ++i) {
      const tasks::TokenTargetsRequest& r = requests[i];
      if (r.tokens.empty() || r.targets.size() != r.tokens.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("token_targets request ", i, ": needs tokens and one target per token"));
      }
      // context tokens[0], continuation tokens[1:] plus a placeholder: exactly `tokens` is
      // fed and every position is scored, so the top-1 token at t is the argmax there.
      v1::LoglikelihoodPair* pair = request.add_pairs();
      pair->add_context_ids(r.tokens[0]);
      for (size_t t = 1; t < r.tokens.size(); ++t) pair->add_continuation_ids(r.tokens[t]);
      pair->add_continuation_ids(0);
    }
    absl::StatusOr<v1::LoglikelihoodResponse> response = WithRetry<v1::LoglikelihoodResponse>(
        options_.retry_for, [&] { return client_->Loglikelihood(request); });
    if (!response.ok()) return response.status();
    if (response->results_size() != static_cast<int>(end - start)) {
      return absl::InternalError("token_targets: wrong number of results");
    }
    for (size_t i = start; i < end; ++i) {
      const v1::LoglikelihoodResult& r = response->results(static_cast<int>(i - start));
      const std::vector<int32_t>& targets = requests[i].targets;
      if (r.top_k_size() != static_cast<int>(targets.size())) {
        return absl::InternalError(absl::StrCat("token_targets request ", i, ": ", r.top_k_size(),
                                                " top-k rows for ", targets.size(), " positions"));
      }
      tasks::TokenTargetsResult result;
      result.logprob = std::numeric_limits<double>::quiet_NaN();
      for (size_t t = 0; t < targets.size(); ++t) {
        if (targets[t] < 0) continue;
        if (r.top_k(static_cast<int>(t)).ids_size() < 1) {
          return absl::InternalError("token_targets: empty top-k row");
        }
        result.argmax.push_back(r.top_k(static_cast<int>(t)).ids(0));
        ++result.n_tokens;
      }
      cached_ += r.cached();
      out.push_back(std::move(result));
    }
    if (options.progress) {
      options.progress(static_cast<int64_t>(out.size()), static_cast<int64_t>(requests.size()));
    }
  }
  return out;
}

absl::StatusOr<std::vector<tasks::ClassifyResult>> RemoteLanguageModel::Classify(
    absl::Span<const tasks::ClassifyRequest> requests, const tasks::CallOptions& options) {
  std::vector<tasks::ClassifyResult> out;
  out.reserve(requests.size());
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, options_.chunk_per_server));
  for (size_t start = 0; start < requests.size(); start += chunk) {
    if (options.cancelled && options.cancelled()) return absl::CancelledError("cancelled");
    const size_t end = std::min(requests.size(), start + chunk);
    v1::ClassifyRequest request;
    request.set_model(options_.model);
    for (size_t i = start; i < end; ++i) {
      v1::ClassifyExample* example = request.add_examples();
      for (const tasks::ClassifyDocument& d : requests[i].documents) {
        v1::ClassifyDocument* doc = example->add_documents();
        doc->set_text(d.text);
        doc->set_pixels(std::string(d.pixels.begin(), d.pixels.end()));
        doc->set_channels(d.channels);
      }
    }
    absl::StatusOr<v1::ClassifyResponse> response = WithRetry<v1::ClassifyResponse>(
        options_.retry_for, [&] { return client_->Classify(request); });
    if (!response.ok()) return response.status();
    if (response->results_size() != static_cast<int>(end - start)) {
      return absl::InternalError("classify: wrong number of results");
    }
    for (const v1::ClassifyResult& r : response->results()) {
      out.push_back({std::vector<float>(r.logits().begin(), r.logits().end()), r.predicted()});
      cached_ += r.cached();
    }
    if (options.progress) {
      options.progress(static_cast<int64_t>(out.size()), static_cast<int64_t>(requests.size()));
    }
  }
  return out;
}

}  // namespace hgeval::client
