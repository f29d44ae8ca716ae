#include "tests/server/lm_eval_http_model.h"

#include <httplib.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/lm_eval/requests.h"
#include "nlohmann/json.hpp"

namespace hgeval::testing {
namespace {

using Json = nlohmann::json;

// urllib3 and aiohttp (lm-eval's clients) keep connections alive and set TCP_NODELAY.
std::unique_ptr<httplib::Client> NewClient(int port) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  client->set_read_timeout(600, 0);
  return client;
}

absl::StatusOr<Json> Call(httplib::Client& client, const std::string& method,
                          const std::string& path, const Json& payload) {
  httplib::Result result =
      method == "GET" ? client.Get(path) : client.Post(path, payload.dump(), "application/json");
  if (!result) return absl::UnavailableError(absl::StrCat(path, ": no answer"));
  if (result->status != 200) {
    return absl::InternalError(absl::StrCat(path, ": HTTP ", result->status, " ", result->body));
  }
  return Json::parse(result->body);
}

}  // namespace

absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> LmEvalHttpModel::Loglikelihood(
    absl::Span<const tasks::LoglikelihoodRequest> requests, const tasks::CallOptions&) {
  // lm-eval tokenizes every request first, on the main thread's session (_encode_pair:
  // trailing whitespace moves to the continuation; the continuation is what the whole
  // encodes past the context's encoding; an empty context is the prefix token).
  const absl::Time tokenize_start = absl::Now();
  std::unique_ptr<httplib::Client> session = NewClient(options_.port);
  const std::string tokenize_path = options_.base_path + "/tokenize";
  auto tokenize = [&](const std::string& text) -> absl::StatusOr<std::vector<int32_t>> {
    ++calls_;
    absl::StatusOr<Json> reply =
        Call(*session, "POST", tokenize_path,
             {{"model", options_.model}, {"prompt", text}, {"add_special_tokens", false}});
    if (!reply.ok()) return reply.status();
    return (*reply)["tokens"].get<std::vector<int32_t>>();
  };
  std::vector<Input> inputs(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    std::vector<int32_t> context_ids, continuation_ids;
    if (requests[i].context.empty()) {
      absl::StatusOr<int32_t> prefix = PrefixToken();
      if (!prefix.ok()) return prefix.status();
      absl::StatusOr<std::vector<int32_t>> ids = tokenize(requests[i].continuation);
      if (!ids.ok()) return ids.status();
      context_ids = {*prefix};
      continuation_ids = *std::move(ids);
    } else {
      std::string context = requests[i].context, continuation = requests[i].continuation;
      const size_t spaces = lm_eval::TrailingPythonWhitespaceBytes(context);
      continuation = context.substr(context.size() - spaces) + continuation;
      context.resize(context.size() - spaces);
      absl::StatusOr<std::vector<int32_t>> whole = tokenize(context + continuation);
      if (!whole.ok()) return whole.status();
      absl::StatusOr<std::vector<int32_t>> ids = tokenize(context);
      if (!ids.ok()) return ids.status();
      context_ids = *std::move(ids);
      continuation_ids.assign(whole->begin() + std::min(context_ids.size(), whole->size()),
                              whole->end());
    }
    Input& input = inputs[i];
    input.tokens = context_ids;
    input.tokens.insert(input.tokens.end(), continuation_ids.begin(), continuation_ids.end());
    input.ctxlen = static_cast<int>(context_ids.size());
    // batch_loglikelihood_requests: the last self.max_length (= max_length - 1) tokens.
    const int64_t keep = options_.max_length - 1;
    if (options_.max_length > 0 && static_cast<int64_t>(input.tokens.size()) > keep) {
      const int64_t cut = static_cast<int64_t>(input.tokens.size()) - keep;
      input.tokens.erase(input.tokens.begin(), input.tokens.begin() + cut);
      input.ctxlen -= static_cast<int>(cut);
    }
  }
  tokenize_seconds_ += absl::ToDoubleSeconds(absl::Now() - tokenize_start);
  return Score(inputs);
}

absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> LmEvalHttpModel::Score(
    const std::vector<Input>& inputs) {
  const absl::Time completions_start = absl::Now();
  std::vector<tasks::LoglikelihoodResult> results(inputs.size());
  const size_t batch_size = static_cast<size_t>(options_.batch_size);
  const size_t batches = (inputs.size() + batch_size - 1) / batch_size;
  const std::string path = options_.base_path + "/v1/completions";
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  absl::Status failure;
  auto worker = [&] {
    std::unique_ptr<httplib::Client> connection = NewClient(options_.port);
    for (size_t b = next++; b < batches; b = next++) {
      const size_t begin = b * batch_size;
      const size_t end = std::min(inputs.size(), begin + batch_size);
      Json prompts = Json::array();
      for (size_t i = begin; i < end; ++i) prompts.push_back(inputs[i].tokens);
      const Json payload = {{"model", options_.model},
                            {"prompt", prompts},
                            {"temperature", 0},
                            {"max_tokens", options_.max_tokens},
                            {"logprobs", 1},
                            {"seed", 1234},
                            {"echo", true}};
      ++calls_;
      absl::StatusOr<Json> reply = Call(*connection, "POST", path, payload);
      if (!reply.ok()) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        failure = reply.status();
        return;
      }
      // LocalCompletionsAPI.parse_logprobs: sum(token_logprobs[ctxlen:-1]) and greedy.
      for (const Json& choice : (*reply)["choices"]) {
        const size_t i = begin + choice["index"].get<size_t>();
        const Json& logprobs = choice["logprobs"];
        const size_t last = logprobs["token_logprobs"].size() - 1;
        tasks::LoglikelihoodResult& result = results[i];
        result.is_greedy = true;
        for (size_t k = static_cast<size_t>(inputs[i].ctxlen); k < last; ++k) {
          const double lp = logprobs["token_logprobs"][k].get<double>();
          result.logprob += lp;
          double best = -1e300;
          for (const auto& [piece, value] : logprobs["top_logprobs"][k].items()) {
            best = std::max(best, value.get<double>());
          }
          result.is_greedy = result.is_greedy && lp == best;
          ++result.n_tokens;
        }
      }
    }
  };
  std::vector<std::thread> workers;
  for (int t = 0; t < options_.num_concurrent; ++t) workers.emplace_back(worker);
  for (std::thread& t : workers) t.join();
  completions_seconds_ += absl::ToDoubleSeconds(absl::Now() - completions_start);
  if (!failure.ok()) return failure;
  return results;
}

absl::StatusOr<std::vector<tasks::RollingResult>> LmEvalHttpModel::LoglikelihoodRolling(
    absl::Span<const tasks::RollingRequest> requests, const tasks::CallOptions&) {
  if (options_.max_length <= 2) {
    return absl::FailedPreconditionError("rolling windows need lm-eval's max_length (> 2)");
  }
  absl::StatusOr<int32_t> prefix = PrefixToken();
  if (!prefix.ok()) return prefix.status();
  std::unique_ptr<httplib::Client> session = NewClient(options_.port);
  // TemplateAPI.loglikelihood_rolling: windows of max_seq_len = self.max_length - 1 over
  // tok_encode(string), each a loglikelihood input; a string's value is their sum.
  std::vector<Input> inputs;
  std::vector<size_t> owner;
  for (size_t i = 0; i < requests.size(); ++i) {
    ++calls_;
    absl::StatusOr<Json> reply = Call(
        *session, "POST", options_.base_path + "/tokenize",
        {{"model", options_.model}, {"prompt", requests[i].text}, {"add_special_tokens", false}});
    if (!reply.ok()) return reply.status();
    const std::vector<int32_t> ids = (*reply)["tokens"].get<std::vector<int32_t>>();
    for (const lm_eval::TokenPair& w :
         lm_eval::MakeRollingWindows(ids, *prefix, options_.max_length - 2)) {
      Input input;
      input.tokens = w.context;
      input.tokens.insert(input.tokens.end(), w.continuation.begin(), w.continuation.end());
      input.ctxlen = static_cast<int>(w.context.size());
      inputs.push_back(std::move(input));
      owner.push_back(i);
    }
  }
  absl::StatusOr<std::vector<tasks::LoglikelihoodResult>> scored = Score(inputs);
  if (!scored.ok()) return scored.status();
  std::vector<tasks::RollingResult> results(requests.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    results[owner[k]].logprob += (*scored)[k].logprob;
    results[owner[k]].n_tokens += (*scored)[k].n_tokens;
  }
  return results;
}

absl::StatusOr<std::vector<tasks::GenerateUntilResult>> LmEvalHttpModel::GenerateUntil(
    absl::Span<const tasks::GenerateUntilRequest>, const tasks::CallOptions&) {
  return absl::UnimplementedError("this replay scores only (loglikelihood and rolling)");
}

tasks::LanguageModelInfo LmEvalHttpModel::info() const {
  tasks::LanguageModelInfo info;
  info.model = options_.model;
  info.bos_regime = "none";
  info.max_length = options_.max_length;
  return info;
}

absl::StatusOr<int32_t> LmEvalHttpModel::PrefixToken() {
  std::unique_ptr<httplib::Client> session = NewClient(options_.port);
  ++calls_;
  absl::StatusOr<Json> info =
      Call(*session, "GET", options_.base_path + "/tokenizer_info?model=" + options_.model, {});
  if (!info.ok()) return info.status();
  const Json& bos = (*info)["bos_token"];
  const Json& special = bos.is_string() ? bos : (*info)["eos_token"];
  ++calls_;
  absl::StatusOr<Json> ids =
      Call(*session, "POST", options_.base_path + "/tokenize",
           {{"model", options_.model}, {"prompt", special}, {"add_special_tokens", false}});
  if (!ids.ok()) return ids.status();
  if ((*ids)["tokens"].size() != 1) return absl::InternalError("the prefix token is not one id");
  return (*ids)["tokens"][0].get<int32_t>();
}

}  // namespace hgeval::testing
