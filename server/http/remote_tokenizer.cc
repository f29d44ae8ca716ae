#include "server/http/remote_tokenizer.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "server/http/http_gateway.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;
using Json = nlohmann::ordered_json;

namespace {

absl::StatusOr<v1::ListModelsResponse> ListModels(v1::ModelService::StubInterface& stub,
                                                  const std::string& authorization) {
  auto context = NewCallContext(authorization);
  v1::ListModelsResponse models;
  if (absl::Status s = FromGrpcStatus(stub.ListModels(context.get(), {}, &models)); !s.ok()) {
    return s;
  }
  return models;
}

// A JSON object body with an optional string "model" (or the path's, ScopedModel).
absl::StatusOr<Json> ParseBody(std::string_view text, const JsonLimits& limits,
                               const std::string& path_model, std::string* model) {
  absl::StatusOr<Json> parsed = ParseJsonBody(text, limits);
  if (!parsed.ok()) return parsed.status();
  Json body = *std::move(parsed);
  if (!body.is_object()) return absl::InvalidArgumentError("the body must be a JSON object");
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return FieldError("model", "model must be a string");
    *model = it->get<std::string>();
  }
  absl::StatusOr<std::string> scoped = ScopedModel(path_model, *model);
  if (!scoped.ok()) return scoped.status();
  *model = *std::move(scoped);
  return body;
}

}  // namespace

absl::StatusOr<RemoteTokenizerGateway::Special> RemoteTokenizerGateway::Describe(
    const std::string& model, const std::string& authorization) const {
  if (absl::Status s = CheckAuthorizationHeader(authorization); !s.ok()) return s;
  Special out;
  out.model = model;
  {
    absl::StatusOr<v1::ListModelsResponse> models = ListModels(*stub_, authorization);
    if (!models.ok()) return models.status();
    if (out.model.empty()) {
      if (models->models_size() != 1) {
        std::vector<std::string> names;
        for (const v1::ModelInfo& m : models->models()) names.push_back(m.name());
        return FieldError("model", absl::StrCat("name the model: this server has ", names.size(),
                                                " (", absl::StrJoin(names, ", "), ")"));
      }
      out.model = models->models(0).name();
    }
    // A loaded model's special tokens are known while its tokenizer stays the same:
    // lm-eval calls /tokenize once per request.
    for (const v1::ModelInfo& info : models->models()) {
      if (info.name() != out.model || !info.loaded()) continue;
      absl::MutexLock lock(&cache_mu_);
      auto cached = cache_.find(out.model);
      if (cached != cache_.end() && cached->second.first == info.tokenizer_hash() &&
          cached->second.second.max_model_len == info.max_sequence_tokens() &&
          cached->second.second.bos_id == info.bos_token_id() &&
          cached->second.second.eos_id == info.eos_token_id()) {
        return cached->second.second;
      }
    }
  }
  {  // Loads the model (ListModels describes loaded models only) or says why it cannot.
    auto context = NewCallContext(authorization);
    v1::TokenizeRequest load;
    load.set_model(out.model);
    v1::TokenizeResponse ignored;
    if (absl::Status s = FromGrpcStatus(stub_->Tokenize(context.get(), load, &ignored)); !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<v1::ListModelsResponse> models = ListModels(*stub_, authorization);
  if (!models.ok()) return models.status();
  std::string tokenizer_hash;
  for (const v1::ModelInfo& info : models->models()) {
    if (info.name() != out.model) continue;
    out.max_model_len = info.max_sequence_tokens();
    out.bos_id = info.bos_token_id();
    out.eos_id = info.eos_token_id();
    tokenizer_hash = info.tokenizer_hash();
  }
  v1::DetokenizeRequest detokenize;
  detokenize.set_model(out.model);
  for (int32_t id : {out.bos_id, out.eos_id}) {
    if (id >= 0) detokenize.add_ids(id);
  }
  v1::DetokenizeResponse pieces;
  auto context = NewCallContext(authorization);
  if (absl::Status s = FromGrpcStatus(stub_->Detokenize(context.get(), detokenize, &pieces));
      !s.ok()) {
    return s;
  }
  int next = 0;
  if (out.bos_id >= 0) out.bos_text = pieces.pieces(next++);
  if (out.eos_id >= 0) out.eos_text = pieces.pieces(next++);
  if (!tokenizer_hash.empty()) {
    absl::MutexLock lock(&cache_mu_);
    cache_[out.model] = {tokenizer_hash, out};
  }
  return out;
}

absl::StatusOr<std::string> RemoteTokenizerGateway::Info(const std::string& model,
                                                         const std::string& authorization) const {
  absl::StatusOr<Special> special = Describe(model, authorization);
  if (!special.ok()) return special.status();
  auto text_or_null = [](const std::string& text) {
    return text.empty() ? Json(nullptr) : Json(text);
  };
  return Json{{"model", special->model},
              {"bos_token", text_or_null(special->bos_text)},
              {"eos_token", text_or_null(special->eos_text)},
              {"pad_token", nullptr},
              {"max_model_len", special->max_model_len}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<std::string> RemoteTokenizerGateway::Tokenize(std::string_view text,
                                                             const std::string& authorization,
                                                             const std::string& path_model) const {
  std::string model;
  absl::StatusOr<Json> body = ParseBody(text, json_limits_, path_model, &model);
  if (!body.ok()) return body.status();
  auto prompt = body->find("prompt");
  if (prompt == body->end() || !prompt->is_string()) {
    return FieldError("prompt", "prompt must be a string");
  }
  bool add_special = true;  // vLLM's default
  if (auto it = body->find("add_special_tokens"); it != body->end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return FieldError("add_special_tokens", "add_special_tokens must be a boolean");
    }
    add_special = it->get<bool>();
  }
  absl::StatusOr<Special> special = Describe(model, authorization);
  if (!special.ok()) return special.status();
  const std::string& prompt_text = prompt->get_ref<const std::string&>();
  std::vector<int32_t> tokens;
  if (!add_special && !special->bos_text.empty() && prompt_text == special->bos_text) {
    tokens = {special->bos_id};
  } else if (!add_special && !special->eos_text.empty() && prompt_text == special->eos_text) {
    tokens = {special->eos_id};
  } else {
    v1::TokenizeRequest request;
    request.set_model(special->model);
    request.set_text(prompt_text);
    // A --http_tokenizer_bos model encodes text in the tokenizer BOS regime.
    request.set_add_special(add_special || bos_models_.contains(special->model));
    v1::TokenizeResponse response;
    auto context = NewCallContext(authorization);
    if (absl::Status s = FromGrpcStatus(stub_->Tokenize(context.get(), request, &response));
        !s.ok()) {
      return s;
    }
    tokens.assign(response.ids().begin(), response.ids().end());
  }
  return Json{
      {"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", special->max_model_len}}
      .dump();
}

absl::StatusOr<std::string> RemoteTokenizerGateway::Detokenize(
    std::string_view text, const std::string& authorization, const std::string& path_model) const {
  std::string model;
  absl::StatusOr<Json> body = ParseBody(text, json_limits_, path_model, &model);
  if (!body.ok()) return body.status();
  auto tokens = body->find("tokens");
  if (tokens == body->end() || !tokens->is_array()) {
    return FieldError("tokens", "tokens must be an array of token ids");
  }
  std::vector<int32_t> ids;
  if (!AppendTokenIds(*tokens, &ids)) {
    return FieldError("tokens", "tokens must be an array of token ids");
  }
  v1::DetokenizeRequest request;
  for (int32_t id : ids) request.add_ids(id);
  if (model.empty()) {
    absl::StatusOr<Special> special = Describe(model, authorization);
    if (!special.ok()) return special.status();
    model = special->model;
  } else if (absl::Status s = CheckAuthorizationHeader(authorization); !s.ok()) {
    return s;
  }
  request.set_model(model);
  v1::DetokenizeResponse response;
  auto context = NewCallContext(authorization);
  if (absl::Status s = FromGrpcStatus(stub_->Detokenize(context.get(), request, &response));
      !s.ok()) {
    return s;
  }
  return Json{{"prompt", response.text()}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace hgeval::server
