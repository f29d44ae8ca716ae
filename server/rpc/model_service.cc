#include "server/rpc/model_service.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/lm_eval/requests.h"
#include "engine/model/lra_input.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/stop_tokens.h"
#include "engine/tokenizer/continuation_text.h"
#include "engine/tokenizer/utf8.h"
#include "engine/util/status_macros.h"
#include "proto/hgeval/v1/bos_mode.h"
#include "server/core/log.h"
#include "server/core/request_prep.h"
#include "server/core/wire_results.h"
#include "server/rpc/generate_request.h"
#include "server/rpc/generation_stream.h"
#include "server/store/stored_results.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;

void FillModelInfo(const LoadedModel& model, v1::ModelInfo* info) {
  info->set_name(model.spec.name);
  info->set_family(model.family);
  info->set_vocab_size(model.info.vocab_size);
  info->set_max_sequence_tokens(model.max_sequence_tokens);
  info->set_num_parameters(model.info.num_parameters);
  info->set_backend(model.info.backend);
  info->set_dtype(model.info.dtype);
  info->set_model_hash(model.model_hash);
  info->set_tokenizer_hash(model.tokenizer_hash);
  info->set_loaded(true);
  if (model.tokenizer == nullptr) {  // an LRA classifier
    info->set_tokenizer_kind(model.lra_vocab.has_value() ? "lra_vocab" : "none");
    return;
  }
  info->set_bos_token_id(model.tokenizer->bos_id());
  info->set_eos_token_id(model.tokenizer->eos_id());
  for (int32_t id : GenerationStopTokens(*model.tokenizer, model.info.eos_token_id)) {
    info->add_stop_token_ids(id);
  }
  info->set_tokenizer_kind(std::string(model.tokenizer->kind()));
  info->set_lm_eval_max_length(LmEvalMaxLength(model, 0));
}

grpc::Status ModelServiceImpl::Admit(grpc::ServerContext* context) const {
  if (grpc::Status s = auth_->Check(*context); !s.ok()) return s;
  if (!ready_) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the server is not serving (starting or stopping)");
  }
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::CheckRequestBytes(
    const google::protobuf::MessageLite& request) const {
  return ToGrpcStatus(CheckRequestSize(request, limits_.max_request_bytes));
}

CallControl ModelServiceImpl::Control(grpc::ServerContext* context) const {
  return ControlFor(context, &stopping_);
}

absl::StatusOr<LoadedModel*> ModelServiceImpl::FindAnyModel(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("model is required");
  HG_RETURN_IF_ERROR(ValidateUtf8(name, "model"));
  return registry_->Get(name);
}

absl::StatusOr<LoadedModel*> ModelServiceImpl::FindModel(const std::string& name) {
  absl::StatusOr<LoadedModel*> model = FindAnyModel(name);
  if (model.ok() && (*model)->model == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("model '", name, "' is an LRA classifier (", (*model)->family,
                     "): it answers Classify only, not language-model calls"));
  }
  return model;
}

grpc::Status ModelServiceImpl::ListModels(grpc::ServerContext* context,
                                          const v1::ListModelsRequest*,
                                          v1::ListModelsResponse* response) {
  InflightCall call(&inflight_);
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  for (const ModelSpec& spec : registry_->List()) {
    v1::ModelInfo* info = response->add_models();
    if (LoadedModel* loaded = registry_->GetIfLoaded(spec.name)) {
      FillModelInfo(*loaded, info);
    } else {
      info->set_name(spec.name);
      info->set_loaded(false);
      if (absl::Status failure = registry_->LoadFailure(spec.name); !failure.ok()) {
        info->set_load_error(std::string(failure.message()));
      }
    }
  }
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::Tokenize(grpc::ServerContext* context,
                                        const v1::TokenizeRequest* request,
                                        v1::TokenizeResponse* response) {
  InflightCall call(&inflight_);
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  if (grpc::Status s = CheckRequestBytes(*request); !s.ok()) return s;
  absl::StatusOr<LoadedModel*> model = FindModel(request->model());
  if (!model.ok()) return ToGrpcStatus(model.status());
  if (absl::Status s = ValidateUtf8(request->text(), "text"); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<std::vector<int32_t>> ids =
      (*model)->tokenizer->Encode(request->text(), request->add_special());
  if (!ids.ok()) return ToGrpcStatus(ids.status());
  for (int32_t id : *ids) {
    response->add_ids(id);
    if (request->return_pieces()) response->add_pieces((*model)->tokenizer->IdToPiece(id));
  }
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::Detokenize(grpc::ServerContext* context,
                                          const v1::DetokenizeRequest* request,
                                          v1::DetokenizeResponse* response) {
  InflightCall call(&inflight_);
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  if (grpc::Status s = CheckRequestBytes(*request); !s.ok()) return s;
  if (request->ids_size() > limits_.max_request_tokens) {
    return ToGrpcStatus(TooManyTokens(request->ids_size(), limits_.max_request_tokens));
  }
  absl::StatusOr<LoadedModel*> model = FindModel(request->model());
  if (!model.ok()) return ToGrpcStatus(model.status());
  const Tokenizer& tokenizer = *(*model)->tokenizer;
  if (absl::Status s = ValidateIds(request->ids(), (*model)->info.vocab_size, "ids"); !s.ok()) {
    return ToGrpcStatus(s);
  }
  StreamingDecoder decoder(&tokenizer);
  std::string text;
  for (int32_t id : request->ids()) {
    absl::StatusOr<std::string> piece = decoder.Push(id);
    if (!piece.ok()) return ToGrpcStatus(piece.status());
    response->add_token_texts(*piece);
    response->add_pieces(tokenizer.IdToPiece(id));
    text += *piece;
  }
  absl::StatusOr<std::string> rest = decoder.Finish();
  if (!rest.ok()) return ToGrpcStatus(rest.status());
  if (!rest->empty() && response->token_texts_size() > 0) {
    *response->mutable_token_texts(response->token_texts_size() - 1) += *rest;
    text += *rest;
  }
  response->set_text(std::move(text));
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::Loglikelihood(grpc::ServerContext* context,
                                             const v1::LoglikelihoodRequest* request,
                                             v1::LoglikelihoodResponse* response) {
  InflightCall call(&inflight_);
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  const absl::Time start = absl::Now();
  if (request->pairs_size() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "pairs is empty");
  }
  if (request->pairs_size() > limits_.max_request_pairs) {
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("request has ", request->pairs_size(), " pairs; this server accepts at most ",
                     limits_.max_request_pairs, " per call"));
  }
  if (request->top_k() < 0 || request->top_k() > limits_.max_top_k) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("top_k must be in [0, ", limits_.max_top_k, "]"));
  }
  if (request->max_length() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "max_length must be >= 0");
  }
  {
    if (grpc::Status s = CheckRequestBytes(*request); !s.ok()) return s;
    if (absl::Status s = CheckBosMode(request->bos_mode()); !s.ok()) return ToGrpcStatus(s);
    int64_t ids = 0;
    for (const v1::LoglikelihoodPair& p : request->pairs()) {
      ids += p.context_ids_size() + p.continuation_ids_size();
    }
    if (ids > limits_.max_request_tokens) {
      return ToGrpcStatus(TooManyTokens(ids, limits_.max_request_tokens));
    }
  }
  absl::StatusOr<LoadedModel*> model = FindModel(request->model());
  if (!model.ok()) return ToGrpcStatus(model.status());
  PairLimits limits;
  limits.vocab_size = (*model)->info.vocab_size;
  limits.max_length = (*model)->max_sequence_tokens;
  if (request->max_length() > 0) {
    limits.max_length = std::min<int64_t>(limits.max_length, request->max_length());
  }
  limits.truncate = request->truncate();
  limits.model_name = request->model();
  const bool add_special = v1::AddsSpecialTokens(request->bos_mode());
  std::vector<TokenPair> pairs;
  pairs.reserve(request->pairs_size());
  int64_t tokens = 0;
  for (int i = 0; i < request->pairs_size(); ++i) {
    int64_t encoded = 0;
    absl::StatusOr<TokenPair> pair = PreparePair(
        ToPairInput(request->pairs(i)), i, *(*model)->tokenizer, add_special, limits, &encoded);
    // Counted as submitted (before truncation), and checked as the pairs are encoded.
    tokens += encoded;
    if (tokens > limits_.max_request_tokens) {
      return ToGrpcStatus(TooManyTokens(tokens, limits_.max_request_tokens));
    }
    if (!pair.ok()) return ToGrpcStatus(pair.status());
    pairs.push_back(*std::move(pair));
  }
  absl::StatusOr<ScoreOutcome> outcome = executor_->ScorePairs(
      **model, pairs, request->top_k(), !request->no_cache(), Control(context));
  if (!outcome.ok()) {
    LogInfo("loglikelihood_failed", {{"model", request->model()},
                                     {"pairs", absl::StrCat(pairs.size())},
                                     {"code", absl::StatusCodeToString(outcome.status().code())}});
    return ToGrpcStatus(outcome.status());
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    v1::LoglikelihoodResult* r = response->add_results();
    *r = ToWire(outcome->results[i]);
    r->mutable_continuation_ids()->Add(pairs[i].continuation.begin(), pairs[i].continuation.end());
    if (!request->return_token_logprobs()) r->clear_token_logprobs();
    if (request->top_k() == 0) r->clear_top_k();
  }
  LogInfo("loglikelihood", {{"model", request->model()},
                            {"peer", context->peer()},
                            {"pairs", absl::StrCat(pairs.size())},
                            {"tokens", absl::StrCat(tokens)},
                            {"cached", absl::StrCat(outcome->cached)},
                            {"computed", absl::StrCat(outcome->computed)},
                            {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::LoglikelihoodRolling(grpc::ServerContext* context,
                                                    const v1::LoglikelihoodRollingRequest* request,
                                                    v1::LoglikelihoodRollingResponse* response) {
  InflightCall call(&inflight_);
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  const absl::Time start = absl::Now();
  if (request->inputs_size() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "inputs is empty");
  }
  if (request->inputs_size() > limits_.max_request_pairs) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("request has ", request->inputs_size(),
                                     " inputs; this server accepts at most ",
                                     limits_.max_request_pairs, " per call"));
  }
  if (request->max_length() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "max_length must be >= 0");
  }
  {
    if (grpc::Status s = CheckRequestBytes(*request); !s.ok()) return s;
    if (absl::Status s = CheckBosMode(request->bos_mode()); !s.ok()) return ToGrpcStatus(s);
    int64_t ids = 0;
    for (const v1::RollingInput& input : request->inputs()) ids += input.ids_size();
    if (ids > limits_.max_request_tokens) {
      return ToGrpcStatus(TooManyTokens(ids, limits_.max_request_tokens));
    }
  }
  absl::StatusOr<LoadedModel*> model = FindModel(request->model());
  if (!model.ok()) return ToGrpcStatus(model.status());
  const Tokenizer& tokenizer = *(*model)->tokenizer;
  int64_t max_length = (*model)->max_sequence_tokens;
  if (request->max_length() > 0) max_length = std::min<int64_t>(max_length, request->max_length());
  const int32_t prefix = lm_eval::PrefixToken(tokenizer);
  std::vector<TokenPair> windows;
  std::vector<size_t> first_window, window_count;
  int64_t tokens = 0;
  for (int i = 0; i < request->inputs_size(); ++i) {
    const v1::RollingInput& input = request->inputs(i);
    const std::string where = absl::StrCat("inputs[", i, "]");
    std::vector<int32_t> ids;
    if (!input.text().empty() && input.ids_size() > 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat(where, " gives both text and ids; use one form"));
    }
    if (input.ids_size() > 0) {
      if (absl::Status s = ValidateIds(input.ids(), (*model)->info.vocab_size, where + ".ids");
          !s.ok()) {
        return ToGrpcStatus(s);
      }
      ids.assign(input.ids().begin(), input.ids().end());
    } else {
      if (input.text().empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(where, " is empty"));
      }
      if (absl::Status s = ValidateUtf8(input.text(), where + ".text"); !s.ok()) {
        return ToGrpcStatus(s);
      }
      absl::StatusOr<std::vector<int32_t>> encoded = lm_eval::EncodeLmEvalText(
          tokenizer, input.text(), v1::AddsSpecialTokens(request->bos_mode()));
      if (!encoded.ok()) return ToGrpcStatus(encoded.status());
      ids = *std::move(encoded);
    }
    if (ids.empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat(where, " encodes to no tokens"));
    }
    if (prefix < 0) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "the tokenizer has no BOS/EOS token to condition the first window on");
    }
    tokens += static_cast<int64_t>(ids.size());
    if (tokens > limits_.max_request_tokens) {
      return ToGrpcStatus(TooManyTokens(tokens, limits_.max_request_tokens));
    }
    std::vector<TokenPair> w = lm_eval::MakeRollingWindows(ids, prefix, max_length);
    first_window.push_back(windows.size());
    window_count.push_back(w.size());
    for (TokenPair& p : w) windows.push_back(std::move(p));
  }
  absl::StatusOr<ScoreOutcome> outcome =
      executor_->ScorePairs(**model, windows, /*top_k=*/0, !request->no_cache(), Control(context));
  if (!outcome.ok()) return ToGrpcStatus(outcome.status());
  for (size_t i = 0; i < first_window.size(); ++i) {
    v1::LoglikelihoodRollingResult* r = response->add_results();
    double logprob = 0;
    int32_t n = 0;
    bool cached = true;
    for (size_t w = first_window[i]; w < first_window[i] + window_count[i]; ++w) {
      const PairScore& wr = outcome->results[w];
      logprob += wr.score.logprob;
      n += wr.continuation_tokens;
      cached = cached && wr.cached;
      if (request->return_token_logprobs()) {
        r->mutable_token_logprobs()->Add(wr.score.token_logprobs.begin(),
                                         wr.score.token_logprobs.end());
      }
    }
    r->set_logprob(logprob);
    r->set_tokens(n);
    r->set_windows(static_cast<int32_t>(window_count[i]));
    r->set_cached(cached);
  }
  LogInfo("loglikelihood_rolling",
          {{"model", request->model()},
           {"inputs", absl::StrCat(request->inputs_size())},
           {"windows", absl::StrCat(windows.size())},
           {"tokens", absl::StrCat(tokens)},
           {"cached", absl::StrCat(outcome->cached)},
           {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::Generate(grpc::ServerContext* context,
                                        const v1::GenerateRequest* request,
                                        grpc::ServerWriter<v1::GenerateResponse>* writer) {
  InflightCall call(&inflight_);
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::string>> until = ValidateGenerateRequest(*request, limits_);
  if (!until.ok()) return ToGrpcStatus(until.status());
  absl::StatusOr<LoadedModel*> model = FindModel(request->model());
  if (!model.ok()) return ToGrpcStatus(model.status());
  absl::StatusOr<GenerationPlan> plan = PlanGeneration(*request, **model, *std::move(until));
  if (!plan.ok()) return ToGrpcStatus(plan.status());
  const GenerateRequest& run = plan->request;
  const StoreKey key{(*model)->model_hash, (*model)->tokenizer_hash, "generate",
                     GenerateDigest(run.prompt, request->max_tokens(), plan->until,
                                    request->temperature(), run.sampling.top_p, run.sampling.seed,
                                    request->ignore_eos(), request->lm_eval())};
  ResultStore* store = executor_->store();
  if (store != nullptr && !request->no_cache()) {
    std::vector<Generation> cached;
    absl::StatusOr<std::vector<bool>> found = LookUpStored(store, {key}, &cached);
    if (!found.ok()) return ToGrpcStatus(found.status());
    if ((*found)[0]) {
      writer->Write(ToWire(cached[0]));
      return grpc::Status::OK;
    }
  }
  auto work = std::make_shared<GenerateWork>();
  work->request = run;
  const CallControl control = Control(context);
  work->deadline = control.deadline;
  if (absl::Status s = (*model)->scheduler->Submit(work); !s.ok()) return ToGrpcStatus(s);
  absl::StatusOr<StreamedGeneration> streamed = StreamGeneration(
      *work, *plan, *(*model)->tokenizer, context, control, stopping_, request->model(), writer);
  if (!streamed.ok()) return ToGrpcStatus(streamed.status());
  if (store != nullptr) {
    if (absl::Status s = store->PutMany({{key, EncodeStored(streamed->whole)}}); !s.ok()) {
      LogWarning("store_write_failed", {{"error", s.ToString()}});
    }
  }
  writer->Write(streamed->last);
  LogInfo("generate", {{"model", request->model()},
                       {"prompt_tokens", absl::StrCat(run.prompt.size())},
                       {"generated_tokens", absl::StrCat(streamed->whole.token_ids.size())},
                       {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
  return grpc::Status::OK;
}

grpc::Status ModelServiceImpl::Classify(grpc::ServerContext* context,
                                        const v1::ClassifyRequest* request,
                                        v1::ClassifyResponse* response) {
  InflightCall call(&inflight_);
  if (grpc::Status s = Admit(context); !s.ok()) return s;
  const absl::Time start = absl::Now();
  if (request->examples_size() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "examples is empty");
  }
  if (request->examples_size() > limits_.max_request_pairs) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        absl::StrCat("request has ", request->examples_size(),
                                     " examples; this server accepts at most ",
                                     limits_.max_request_pairs, " per call"));
  }
  if (grpc::Status s = CheckRequestBytes(*request); !s.ok()) return s;
  absl::StatusOr<LoadedModel*> model = FindAnyModel(request->model());
  if (!model.ok()) return ToGrpcStatus(model.status());
  if ((*model)->classifier == nullptr) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("model '", request->model(), "' is a language model (",
                                     (*model)->family, "), not an LRA classifier"));
  }
  const LraVocabulary* vocab = (*model)->lra_vocab.has_value() ? &*(*model)->lra_vocab : nullptr;
  std::vector<LraInput> inputs(request->examples_size());
  int64_t positions = 0;
  for (int i = 0; i < request->examples_size(); ++i) {
    for (const v1::ClassifyDocument& d : request->examples(i).documents()) {
      const std::string where = absl::StrCat("examples[", i, "]: ");
      if (!d.text().empty() && !utf8::IsValid(d.text())) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, where + "text is not valid UTF-8");
      }
      const auto* pixels = reinterpret_cast<const uint8_t*>(d.pixels().data());
      absl::StatusOr<LraDocument> doc =
          MakeLraDocument((*model)->classifier->config(), vocab, d.text(),
                          absl::MakeConstSpan(pixels, d.pixels().size()), d.channels());
      if (!doc.ok()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            where + std::string(doc.status().message()));
      }
      positions += static_cast<int64_t>(doc->tokens.size() + doc->pixels.size());
      inputs[i].documents.push_back(*std::move(doc));
    }
  }
  if (positions > limits_.max_request_tokens) {
    return ToGrpcStatus(TooManyTokens(positions, limits_.max_request_tokens));
  }
  int64_t cached = 0;
  absl::StatusOr<std::vector<Classification>> results =
      executor_->Classify(**model, inputs, !request->no_cache(), Control(context), &cached);
  if (!results.ok()) {
    LogInfo("classify_failed", {{"model", request->model()},
                                {"examples", absl::StrCat(inputs.size())},
                                {"code", absl::StatusCodeToString(results.status().code())}});
    return ToGrpcStatus(results.status());
  }
  for (const Classification& r : *results) *response->add_results() = ToWire(r);
  LogInfo("classify", {{"model", request->model()},
                       {"peer", context->peer()},
                       {"examples", absl::StrCat(inputs.size())},
                       {"positions", absl::StrCat(positions)},
                       {"cached", absl::StrCat(cached)},
                       {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
  return grpc::Status::OK;
}

}  // namespace hgeval::server
