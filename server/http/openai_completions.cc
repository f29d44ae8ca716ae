#include "server/http/openai_completions.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "server/http/http_gateway.h"

namespace hgeval::server {
namespace v1 = ::hgeval::v1;
using Json = nlohmann::ordered_json;

namespace {

// Whether the key is absent or null (OpenAI treats both as "use the default").
bool Unset(const Json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null();
}

absl::Status ParsePrompt(const Json& prompt, CompletionRequest* out) {
  const char* kShape =
      "prompt must be a string, an array of strings, an array of token ids or an array of "
      "arrays of token ids";
  if (prompt.is_string()) {
    out->text_prompts.push_back(prompt.get<std::string>());
    return absl::OkStatus();
  }
  if (!prompt.is_array()) return FieldError("prompt", kShape);
  if (prompt.empty()) return FieldError("prompt", "prompt is an empty array");
  if (prompt[0].is_string()) {
    for (const Json& p : prompt) {
      if (!p.is_string()) return FieldError("prompt", kShape);
      out->text_prompts.push_back(p.get<std::string>());
    }
    return absl::OkStatus();
  }
  out->prompts_are_ids = true;
  if (prompt[0].is_number()) {
    out->id_prompts.emplace_back();
    if (!AppendTokenIds(prompt, &out->id_prompts.back())) return FieldError("prompt", kShape);
    return absl::OkStatus();
  }
  for (const Json& p : prompt) {
    if (!p.is_array()) return FieldError("prompt", kShape);
    out->id_prompts.emplace_back();
    if (!AppendTokenIds(p, &out->id_prompts.back())) return FieldError("prompt", kShape);
  }
  return absl::OkStatus();
}

// An integer field that must hold exactly `only` when given (n, best_of).
absl::Status CheckOnly(const Json& body, const char* key, int64_t only) {
  if (Unset(body, key)) return absl::OkStatus();
  const Json& v = body[key];
  if (!v.is_number_integer() || v.get<int64_t>() != only) {
    return FieldError(key, absl::StrCat(key, " must be ", only, " (one choice per prompt)"));
  }
  return absl::OkStatus();
}

absl::Status ParseFloat(const Json& body, const char* key, float* out) {
  if (Unset(body, key)) return absl::OkStatus();
  if (!body[key].is_number()) return FieldError(key, absl::StrCat(key, " must be a number"));
  *out = static_cast<float>(body[key].get<double>());
  return absl::OkStatus();
}

absl::Status ParseBool(const Json& body, const char* key, bool* out) {
  if (Unset(body, key)) return absl::OkStatus();
  if (!body[key].is_boolean()) return FieldError(key, absl::StrCat(key, " must be a boolean"));
  *out = body[key].get<bool>();
  return absl::OkStatus();
}

// An integer field; values past int32 are clamped so that the RPC reports its limit.
absl::Status ParseInt32(const Json& body, const char* key, int32_t* out) {
  if (Unset(body, key)) return absl::OkStatus();
  const Json& v = body[key];
  if (!v.is_number_integer()) return FieldError(key, absl::StrCat(key, " must be an integer"));
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    *out = u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())
               ? std::numeric_limits<int32_t>::max()
               : static_cast<int32_t>(u);
    return absl::OkStatus();
  }
  const int64_t s = v.get<int64_t>();
  *out = static_cast<int32_t>(std::clamp<int64_t>(s, std::numeric_limits<int32_t>::min(),
                                                  std::numeric_limits<int32_t>::max()));
  return absl::OkStatus();
}

// Unicode code points in UTF-8 text (Python's len() of the decoded str).
int64_t CodePoints(std::string_view text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

struct Generated {
  std::vector<int32_t> ids;
  std::string text;
  std::string finish_reason = "length";
};

constexpr size_t kParallelGenerations = 16;

absl::StatusOr<Generated> GenerateOne(v1::ModelService::StubInterface& stub,
                                      const CompletionRequest& request,
                                      const std::vector<int32_t>& prompt,
                                      const std::string& authorization) {
  v1::GenerateRequest generate;
  generate.set_model(request.model);
  for (int32_t id : prompt) generate.add_prompt_ids(id);
  generate.set_max_tokens(request.max_tokens);
  for (const std::string& stop : request.stop) generate.add_until(stop);
  generate.set_temperature(request.temperature);
  generate.set_top_p(request.top_p);
  generate.set_seed(request.seed);
  auto context = NewCallContext(authorization);
  std::unique_ptr<grpc::ClientReaderInterface<v1::GenerateResponse>> reader =
      stub.Generate(context.get(), generate);
  Generated out;
  v1::GenerateResponse chunk;
  while (reader->Read(&chunk)) {
    out.text += chunk.text();
    out.ids.insert(out.ids.end(), chunk.token_ids().begin(), chunk.token_ids().end());
    if (chunk.finished() && chunk.finish_reason() != v1::FINISH_REASON_LENGTH) {
      out.finish_reason = "stop";
    }
  }
  if (absl::Status s = FromGrpcStatus(reader->Finish()); !s.ok()) return s;
  return out;
}

}  // namespace

int64_t EstimateResponseBytes(const CompletionRequest& request,
                              const std::vector<int64_t>& prompt_tokens) {
  // Lower bounds of the JSON per item: a shown token's piece, offset, log-probability and
  // top object ("x",0,-1.234567,{} with separators); an alternative "x":-1.234567,.
  constexpr int64_t kPerShownToken = 24;
  constexpr int64_t kPerAlternative = 14;
  constexpr int64_t kPerChoice = 96;
  int64_t bytes = 0;
  for (int64_t prompt : prompt_tokens) {
    const int64_t shown = (request.echo ? prompt : 0) + std::max<int32_t>(request.max_tokens, 0);
    bytes += kPerChoice + shown;  // the text: a byte per token at least
    if (request.logprobs.has_value()) {
      bytes += shown * (kPerShownToken + std::max<int32_t>(*request.logprobs, 0) * kPerAlternative);
    }
  }
  return bytes;
}

absl::StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body_text,
                                                         const JsonLimits& limits,
                                                         const std::string& path_model) {
  absl::StatusOr<Json> parsed = ParseJsonBody(body_text, limits);
  if (!parsed.ok()) return parsed.status();
  Json body = *std::move(parsed);
  if (!body.is_object()) return absl::InvalidArgumentError("the body must be a JSON object");
  CompletionRequest request;
  if (Unset(body, "model") && path_model.empty()) {
    return FieldError("model", "model is required");
  }
  std::string named;
  if (!Unset(body, "model")) {
    if (!body["model"].is_string()) return FieldError("model", "model must be a string");
    named = body["model"].get<std::string>();
  }
  absl::StatusOr<std::string> model = ScopedModel(path_model, named);
  if (!model.ok()) return model.status();
  request.model = *std::move(model);
  if (Unset(body, "prompt")) return FieldError("prompt", "prompt is required");
  if (absl::Status s = ParsePrompt(body["prompt"], &request); !s.ok()) return s;
  if (absl::Status s = ParseInt32(body, "max_tokens", &request.max_tokens); !s.ok()) return s;
  if (request.max_tokens < 0) return FieldError("max_tokens", "max_tokens must be >= 0");
  if (absl::Status s = ParseFloat(body, "temperature", &request.temperature); !s.ok()) return s;
  if (absl::Status s = ParseFloat(body, "top_p", &request.top_p); !s.ok()) return s;
  if (absl::Status s = ParseBool(body, "echo", &request.echo); !s.ok()) return s;
  if (!Unset(body, "stop")) {
    const Json& stop = body["stop"];
    if (stop.is_string()) {
      request.stop.push_back(stop.get<std::string>());
    } else if (stop.is_array()) {
      for (const Json& s : stop) {
        if (!s.is_string()) {
          return FieldError("stop", "stop must be a string or an array of strings");
        }
        request.stop.push_back(s.get<std::string>());
      }
    } else {
      return FieldError("stop", "stop must be a string or an array of strings");
    }
  }
  if (!Unset(body, "seed")) {
    const Json& seed = body["seed"];
    if (!seed.is_number_integer()) return FieldError("seed", "seed must be an integer");
    request.seed = seed.is_number_unsigned() ? seed.get<uint64_t>()
                                             : static_cast<uint64_t>(seed.get<int64_t>());
  }
  if (!Unset(body, "logprobs")) {
    int32_t logprobs = 0;
    if (!body["logprobs"].is_number_integer()) {
      return FieldError("logprobs", "logprobs must be an integer or null");
    }
    if (absl::Status s = ParseInt32(body, "logprobs", &logprobs); !s.ok()) return s;
    request.logprobs = logprobs;
  }
  if (absl::Status s = CheckOnly(body, "n", 1); !s.ok()) return s;
  if (absl::Status s = CheckOnly(body, "best_of", 1); !s.ok()) return s;
  if (!Unset(body, "stream") && body["stream"] != false) {
    return FieldError("stream", "stream is not supported: send stream=false or leave it out");
  }
  if (!Unset(body, "suffix") && body["suffix"] != "") {
    return FieldError("suffix", "suffix is not supported");
  }
  return request;
}

absl::StatusOr<std::string> CompletionsGateway::ListModels(const std::string& authorization,
                                                           const std::string& path_model) const {
  if (absl::Status s = CheckAuthorizationHeader(authorization); !s.ok()) return s;
  auto context = NewCallContext(authorization);
  v1::ListModelsResponse response;
  if (absl::Status s = FromGrpcStatus(stub_->ListModels(context.get(), {}, &response)); !s.ok()) {
    return s;
  }
  Json data = Json::array();
  for (const v1::ModelInfo& info : response.models()) {
    if (!path_model.empty() && info.name() != path_model) continue;
    Json model = {{"id", info.name()}, {"object", "model"}, {"created", 0}, {"owned_by", "hgeval"}};
    if (info.loaded()) {
      model["max_model_len"] = info.max_sequence_tokens();
      model["family"] = info.family();
    }
    data.push_back(std::move(model));
  }
  if (!path_model.empty() && data.empty()) {
    return absl::NotFoundError(absl::StrCat("this server has no model '", path_model, "'"));
  }
  return Json{{"object", "list"}, {"data", std::move(data)}}.dump();
}

namespace {

bool GreedyTokenFromScoring(const CompletionRequest& request) {
  return request.max_tokens == 1 && request.temperature == 0.0f && request.stop.empty() &&
         request.logprobs.has_value() && *request.logprobs >= 1;
}

// The loaded model's generation stop ids; nullopt when the token cannot be taken from the
// scoring pass.
std::optional<std::vector<int32_t>> LoadedStopIds(v1::ModelService::StubInterface& stub,
                                                  const std::string& model,
                                                  const std::string& authorization) {
  auto context = NewCallContext(authorization);
  v1::ListModelsResponse models;
  if (!stub.ListModels(context.get(), {}, &models).ok()) return std::nullopt;
  for (const v1::ModelInfo& info : models.models()) {
    if (info.name() != model) continue;
    // Not loaded yet, or no tokenizer: the generation path loads it and says what fails.
    if (!info.loaded() || info.tokenizer_kind().empty() || info.tokenizer_kind() == "none") {
      return std::nullopt;
    }
    return std::vector<int32_t>(info.stop_token_ids().begin(), info.stop_token_ids().end());
  }
  return std::nullopt;
}

absl::Status TakeGreedyTokens(const std::vector<int32_t>& stop_ids, const std::vector<int>& pair_of,
                              v1::LoglikelihoodResponse* scores,
                              std::vector<Generated>* generated) {
  for (size_t i = 0; i < pair_of.size(); ++i) {
    if (pair_of[i] < 0) continue;
    v1::LoglikelihoodResult* scored = scores->mutable_results(pair_of[i]);
    const int last = scored->token_logprobs_size() - 1;
    if (last < 0 || last >= scored->top_k_size() || scored->top_k(last).ids_size() == 0) {
      return absl::InternalError("the scoring pass returned no alternatives to take a token from");
    }
    // The argmax, lowest id on ties (as the decoder's greedy choice).
    const v1::TopTokens& top = scored->top_k(last);
    int best = 0;
    for (int a = 1; a < top.ids_size(); ++a) {
      if (top.logprobs(a) > top.logprobs(best) ||
          (top.logprobs(a) == top.logprobs(best) && top.ids(a) < top.ids(best))) {
        best = a;
      }
    }
    Generated& out = (*generated)[i];
    // A stop token ends the generation ("stop") but is still shown with its log-probability
    // (its text is empty), as vLLM shows EOS: lm-eval drops the last shown position as the
    // generated one, so it must be there.
    out.ids = {top.ids(best)};
    out.finish_reason = std::find(stop_ids.begin(), stop_ids.end(), top.ids(best)) != stop_ids.end()
                            ? "stop"
                            : "length";
    scored->set_token_logprobs(last, top.logprobs(best));
    // Its text is what it adds after the prompt (step 5).
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> CompletionsGateway::Complete(const CompletionRequest& request,
                                                         const std::string& authorization) const {
  if (absl::Status s = CheckAuthorizationHeader(authorization); !s.ok()) return s;
  const size_t n =
      request.prompts_are_ids ? request.id_prompts.size() : request.text_prompts.size();
  // 1. Prompts as ids: text goes through Tokenize with the tokenizer's special tokens, as
  //    OpenAI-compatible servers encode a text prompt.
  std::vector<std::vector<int32_t>> prompts(n);
  for (size_t i = 0; i < n; ++i) {
    if (request.prompts_are_ids) {
      prompts[i] = request.id_prompts[i];
    } else {
      v1::TokenizeRequest tokenize;
      tokenize.set_model(request.model);
      tokenize.set_text(request.text_prompts[i]);
      tokenize.set_add_special(true);
      v1::TokenizeResponse ids;
      auto context = NewCallContext(authorization);
      if (absl::Status s = FromGrpcStatus(stub_->Tokenize(context.get(), tokenize, &ids));
          !s.ok()) {
        return s;
      }
      prompts[i].assign(ids.ids().begin(), ids.ids().end());
    }
    if (prompts[i].empty()) {
      return FieldError("prompt", absl::StrCat("prompt ", i, " has no tokens"));
    }
  }
  // 2. Before computing anything: the response's size (echo x logprobs x prompts can turn
  //    a 1 MB body into hundreds of MB of JSON).
  std::vector<int64_t> prompt_lengths;
  prompt_lengths.reserve(prompts.size());
  for (const std::vector<int32_t>& prompt : prompts) {
    prompt_lengths.push_back(static_cast<int64_t>(prompt.size()));
  }
  if (const int64_t bytes = EstimateResponseBytes(request, prompt_lengths);
      bytes > max_response_bytes_) {
    return FieldError(
        request.logprobs.has_value() ? "logprobs" : "max_tokens",
        absl::StrCat("the response would hold at least ", bytes,
                     " bytes, over this server's limit of ", max_response_bytes_,
                     " (--http_max_response_bytes); send fewer prompts per call, fewer "
                     "logprobs, fewer max_tokens or echo=false"));
  }
  // 3. Generations, run at once (at most kParallelGenerations) so that the scheduler
  //    decodes a batched request's prompts together, as lm-eval's batch_size > 1 expects.
  //    A greedy one-token completion scored with logprobs (lm-eval's loglikelihood
  //    payload) needs no generation: its token is the argmax of the distribution the
  //    scoring pass computes after the prompt anyway, so a placeholder is scored in its
  //    place and the token read from that position's alternatives (step 4).
  std::vector<Generated> generated(n);
  const std::optional<std::vector<int32_t>> stop_ids =
      GreedyTokenFromScoring(request) ? LoadedStopIds(*stub_, request.model, authorization)
                                      : std::nullopt;
  const bool token_from_scoring = stop_ids.has_value();
  if (request.max_tokens > 0 && !token_from_scoring) {
    std::vector<absl::Status> failures(n);
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < n; i = next++) {
        absl::StatusOr<Generated> one = GenerateOne(*stub_, request, prompts[i], authorization);
        if (one.ok()) {
          generated[i] = *std::move(one);
        } else {
          failures[i] = one.status();
        }
      }
    };
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < std::min(n, kParallelGenerations); ++t) helpers.emplace_back(work);
    work();
    for (std::thread& t : helpers) t.join();
    for (const absl::Status& failure : failures) {
      if (!failure.ok()) return failure;
    }
  }
  // 4. Log-probabilities of the shown tokens (prompt and generation with echo), all
  //    prompts in one Loglikelihood call. Each shown token but the very first is scored.
  std::vector<int> pair_of(n, -1);
  v1::LoglikelihoodResponse scores;
  if (request.logprobs.has_value()) {
    v1::LoglikelihoodRequest score;
    score.set_model(request.model);
    score.set_return_token_logprobs(true);
    score.set_top_k(*request.logprobs);
    for (size_t i = 0; i < n; ++i) {
      const size_t context_len = request.echo ? 1 : prompts[i].size();
      const size_t placeholder = token_from_scoring ? 1 : 0;
      if (prompts[i].size() + generated[i].ids.size() + placeholder <= context_len) continue;
      v1::LoglikelihoodPair* pair = score.add_pairs();
      for (size_t k = 0; k < context_len; ++k) pair->add_context_ids(prompts[i][k]);
      for (size_t k = context_len; k < prompts[i].size(); ++k) {
        pair->add_continuation_ids(prompts[i][k]);
      }
      for (int32_t id : generated[i].ids) pair->add_continuation_ids(id);
      if (token_from_scoring) pair->add_continuation_ids(prompts[i].back());  // placeholder
      pair_of[i] = score.pairs_size() - 1;
    }
    if (score.pairs_size() > 0) {
      auto context = NewCallContext(authorization);
      if (absl::Status s = FromGrpcStatus(stub_->Loglikelihood(context.get(), score, &scores));
          !s.ok()) {
        return s;
      }
    }
    if (token_from_scoring) {
      if (absl::Status s = TakeGreedyTokens(*stop_ids, pair_of, &scores, &generated); !s.ok()) {
        return s;
      }
    }
  }
  // 5. Text of each shown token (and of an id prompt), pieces of the alternatives.
  Json choices = Json::array();
  int64_t prompt_tokens = 0, completion_tokens = 0;
  for (size_t i = 0; i < n; ++i) {
    prompt_tokens += static_cast<int64_t>(prompts[i].size());
    completion_tokens += static_cast<int64_t>(generated[i].ids.size());
    const bool need_tokens =
        request.logprobs.has_value() || (request.echo && request.prompts_are_ids);
    v1::DetokenizeResponse shown;
    if (need_tokens) {
      v1::DetokenizeRequest detokenize;
      detokenize.set_model(request.model);
      for (int32_t id : prompts[i]) detokenize.add_ids(id);
      for (int32_t id : generated[i].ids) detokenize.add_ids(id);
      auto context = NewCallContext(authorization);
      if (absl::Status s = FromGrpcStatus(stub_->Detokenize(context.get(), detokenize, &shown));
          !s.ok()) {
        return s;
      }
    }
    if (token_from_scoring && need_tokens && generated[i].finish_reason != "stop") {
      // The exact continuation: what the generated ids add after the prompt.
      generated[i].text.clear();
      for (int k = static_cast<int>(prompts[i].size()); k < shown.token_texts_size(); ++k) {
        generated[i].text += shown.token_texts(k);
      }
    }
    std::string prompt_text;
    if (request.prompts_are_ids) {
      for (size_t k = 0; k < prompts[i].size() && need_tokens; ++k) {
        prompt_text += shown.token_texts(static_cast<int>(k));
      }
    } else {
      prompt_text = request.text_prompts[i];
    }
    Json choice = {{"index", i},
                   {"text", request.echo ? prompt_text + generated[i].text : generated[i].text}};
    if (request.logprobs.has_value()) {
      const size_t first = request.echo ? 0 : prompts[i].size();
      const v1::LoglikelihoodResult* scored =
          pair_of[i] >= 0 ? &scores.results(pair_of[i]) : nullptr;
      // Pieces of the alternatives, one call for the whole choice.
      v1::DetokenizeResponse alternatives;
      if (scored != nullptr && *request.logprobs > 0) {
        v1::DetokenizeRequest detokenize;
        detokenize.set_model(request.model);
        for (const v1::TopTokens& top : scored->top_k()) {
          for (int32_t id : top.ids()) detokenize.add_ids(id);
        }
        auto context = NewCallContext(authorization);
        if (absl::Status s =
                FromGrpcStatus(stub_->Detokenize(context.get(), detokenize, &alternatives));
            !s.ok()) {
          return s;
        }
      }
      Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(),
           text_offset = Json::array();
      int64_t offset = request.echo ? 0 : CodePoints(prompt_text);
      int alternative = 0;
      for (size_t k = first; k < static_cast<size_t>(shown.pieces_size()); ++k) {
        tokens.push_back(shown.pieces(static_cast<int>(k)));
        text_offset.push_back(offset);
        offset += CodePoints(shown.token_texts(static_cast<int>(k)));
        // Scored positions: the continuation of the pair, which starts at shown token 1
        // with echo and at the first generated token without.
        const size_t context_len = request.echo ? 1 : prompts[i].size();
        if (scored == nullptr || k < context_len) {
          token_logprobs.push_back(nullptr);
          top_logprobs.push_back(nullptr);
          continue;
        }
        const int position = static_cast<int>(k - context_len);
        token_logprobs.push_back(static_cast<double>(scored->token_logprobs(position)));
        Json top = Json::object();
        if (position < scored->top_k_size()) {
          const v1::TopTokens& t = scored->top_k(position);
          for (int a = 0; a < t.ids_size(); ++a, ++alternative) {
            top[alternatives.pieces(alternative)] = static_cast<double>(t.logprobs(a));
          }
        }
        top_logprobs.push_back(std::move(top));
      }
      choice["logprobs"] = {{"tokens", std::move(tokens)},
                            {"token_logprobs", std::move(token_logprobs)},
                            {"top_logprobs", std::move(top_logprobs)},
                            {"text_offset", std::move(text_offset)}};
    } else {
      choice["logprobs"] = nullptr;
    }
    choice["finish_reason"] = generated[i].finish_reason;
    choices.push_back(std::move(choice));
  }
  static std::atomic<uint64_t> next_id{0};
  Json response = {
      {"id", absl::StrCat("cmpl-hgeval-", absl::ToUnixMicros(absl::Now()), "-", next_id++)},
      {"object", "text_completion"},
      {"created", absl::ToUnixSeconds(absl::Now())},
      {"model", request.model},
      {"choices", std::move(choices)},
      {"usage",
       {{"prompt_tokens", prompt_tokens},
        {"completion_tokens", completion_tokens},
        {"total_tokens", prompt_tokens + completion_tokens}}}};
  // Generated text may hold invalid UTF-8 only if the model produced it: replaced, never
  // thrown.
  return response.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace hgeval::server
