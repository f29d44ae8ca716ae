// End to end: hgeval-server's OpenAI-compatible endpoint (--http_listen) with the golden
// HGRN2 checkpoint. The request bodies are the ones lm-evaluation-harness's
// `local-completions` model builds (lm_eval/models/api_models.py, openai_completions.py):
// loglikelihood pairs and rolling windows as `echo=true, logprobs=1, max_tokens=1` over
// token ids, generate_until with `stop`/`max_tokens`/`temperature`/`seed`. The responses
// are parsed as lm-eval parses them and must equal the gRPC path bit for bit. Malformed
// bodies get OpenAI-style errors and the server stays up.
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "engine/lm_eval/requests.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/request_prep.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;
using testing::SourcePath;
using Json = nlohmann::json;
namespace v1 = ::hgeval::v1;

// lm-eval's TemplateAPI(max_length=...) argument in these tests; it keeps one token for
// generation (self.max_length = max_length - 1).
constexpr int kLmEvalMaxLength = 33;
constexpr int kSelfMaxLength = kLmEvalMaxLength - 1;

struct HttpReply {
  int status = 0;
  Json body;
};

// A running server with --http_listen, its HTTP port and a gRPC client.
struct HttpServer {
  std::unique_ptr<ServerProcess> process;
  int http_port = 0;
  std::unique_ptr<client::Client> grpc;

  static std::unique_ptr<HttpServer> Start(const std::string& tag,
                                           std::vector<std::string> extra_args,
                                           const std::string& token = "") {
    auto server = std::make_unique<HttpServer>();
    const std::string dir = testing::MakeTempDir(tag);
    std::vector<std::string> args = testing::GoldenServerArgs(dir);
    args.push_back("--http_listen=127.0.0.1:0");
    args.push_back("--http_port_file=" + dir + "/http-port");
    args.push_back("--shutdown_grace_ms=0");
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    server->process = std::make_unique<ServerProcess>();
    if (!server->process->Start(dir, args).ok()) return nullptr;
    std::ifstream(dir + "/http-port") >> server->http_port;
    client::ClientOptions options;
    options.servers = {server->process->address()};
    options.token = token;
    options.timeout = absl::Seconds(60);
    server->grpc = *client::Client::Connect(options);
    if (!server->grpc->WaitServing(absl::Seconds(30)).ok()) return nullptr;
    return server;
  }

  HttpReply Send(const std::string& method, const std::string& path, const std::string& body,
                 const std::string& authorization = "") const {
    httplib::Client http("127.0.0.1", http_port);
    http.set_read_timeout(120, 0);
    httplib::Headers headers;
    if (!authorization.empty()) headers.emplace("Authorization", authorization);
    httplib::Result result = method == "GET" ? http.Get(path, headers)
                                             : http.Post(path, headers, body, "application/json");
    HttpReply reply;
    if (!result) return reply;
    reply.status = result->status;
    reply.body = Json::parse(result->body, nullptr, false);
    return reply;
  }
  HttpReply Complete(const Json& payload, const std::string& authorization = "") const {
    return Send("POST", "/v1/completions", payload.dump(), authorization);
  }
};

// lm-eval's LocalCompletionsAPI.parse_logprobs: per choice (sorted by index),
// sum(token_logprobs[ctxlen:-1]) and whether each of those equals max(top.values()).
std::vector<std::pair<double, bool>> ParseLogprobs(const Json& response,
                                                   const std::vector<int>& ctxlens) {
  std::vector<Json> choices(response["choices"].begin(), response["choices"].end());
  std::sort(choices.begin(), choices.end(),
            [](const Json& a, const Json& b) { return a["index"] < b["index"]; });
  std::vector<std::pair<double, bool>> out;
  for (size_t c = 0; c < choices.size() && c < ctxlens.size(); ++c) {
    const Json& logprobs = choices[c]["logprobs"];
    const size_t end = logprobs["token_logprobs"].size() - 1;
    double sum = 0;  // Python's sum(): left to right from 0
    bool greedy = true;
    for (size_t k = static_cast<size_t>(ctxlens[c]); k < end; ++k) {
      const double lp = logprobs["token_logprobs"][k].get<double>();
      sum += lp;
      double best = -std::numeric_limits<double>::infinity();
      for (const auto& [piece, value] : logprobs["top_logprobs"][k].items()) {
        best = std::max(best, value.get<double>());
      }
      greedy = greedy && lp == best;
    }
    out.emplace_back(sum, greedy);
  }
  return out;
}

class OpenAiHttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = HttpServer::Start("openai-http-e2e", {"--max_sequence_tokens=96", "--preload=all",
                                                    "--max_message_bytes=1048576"})
                  .release();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(server_->http_port, 0);
    tokenizer_ = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"))->release();
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) server_->process->Stop(SIGTERM);
    delete server_;
    delete tokenizer_;
  }

  // lm-eval's batch_loglikelihood_requests: (context_enc + continuation_enc)[-max_length:]
  // and the context length left after that cut.
  static void AddLmEvalInput(const lm_eval::TokenPair& pair, Json* prompts,
                             std::vector<int>* ctxlens) {
    std::vector<int32_t> input = pair.context;
    input.insert(input.end(), pair.continuation.begin(), pair.continuation.end());
    const size_t total = input.size();
    if (total > static_cast<size_t>(kSelfMaxLength)) {
      input.erase(input.begin(), input.end() - kSelfMaxLength);
    }
    prompts->push_back(input);
    ctxlens->push_back(static_cast<int>(pair.context.size()) -
                       std::max(0, static_cast<int>(total) - kSelfMaxLength));
  }

  // LocalCompletionsAPI._create_payload(generate=False).
  static Json LoglikelihoodPayload(const Json& prompts) {
    return {{"model", "hgrn2"}, {"prompt", prompts}, {"temperature", 0}, {"max_tokens", 1},
            {"logprobs", 1},    {"seed", 1234},      {"echo", true}};
  }

  static HttpServer* server_;
  static Tokenizer* tokenizer_;
};
HttpServer* OpenAiHttpTest::server_ = nullptr;
Tokenizer* OpenAiHttpTest::tokenizer_ = nullptr;

TEST_F(OpenAiHttpTest, ModelsListsTheServedModel) {
  HttpReply reply = server_->Send("GET", "/v1/models", "");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.body["object"], "list");
  ASSERT_EQ(reply.body["data"].size(), 1u);
  EXPECT_EQ(reply.body["data"][0]["id"], "hgrn2");
  EXPECT_EQ(reply.body["data"][0]["object"], "model");
  EXPECT_EQ(reply.body["data"][0]["max_model_len"], 96);
}

TEST_F(OpenAiHttpTest, LoglikelihoodPairsEqualTheGrpcPathBitForBit) {
  // lm-eval's API models encode without special tokens (add_bos_token=False) and use
  // BOS (else EOS) as the prefix of an empty context: the gRPC path's BOS_MODE_NONE.
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"Once upon a time", " there was a little girl"},
      {"The cat sat on the ", "mat"},
      {"", "Lily liked to play outside."},
      {"One day, Tim went to the park with his mom. He saw a big red ball and a small dog",
       " that ran after the ball."},  // longer than max_length: left-truncated
  };
  Json prompts = Json::array();
  std::vector<int> ctxlens;
  v1::LoglikelihoodRequest grpc_request;
  grpc_request.set_model("hgrn2");
  grpc_request.set_bos_mode(v1::BOS_MODE_NONE);
  grpc_request.set_no_cache(true);
  grpc_request.set_truncate(true);
  grpc_request.set_max_length(kSelfMaxLength - 1);  // fed tokens: lm-eval's input minus 1
  for (const auto& [context, continuation] : pairs) {
    absl::StatusOr<lm_eval::TokenPair> encoded = lm_eval::EncodeLmEvalPair(
        *tokenizer_, context, continuation, /*add_bos=*/false, lm_eval::PrefixToken(*tokenizer_));
    ASSERT_TRUE(encoded.ok()) << encoded.status();
    AddLmEvalInput(*encoded, &prompts, &ctxlens);
    v1::LoglikelihoodPair* pair = grpc_request.add_pairs();
    pair->set_context(context);
    pair->set_continuation(continuation);
  }
  EXPECT_LT(static_cast<size_t>(ctxlens.back()), prompts.back().size());  // was truncated
  HttpReply reply = server_->Complete(LoglikelihoodPayload(prompts));
  ASSERT_EQ(reply.status, 200) << reply.body;
  const std::vector<std::pair<double, bool>> parsed = ParseLogprobs(reply.body, ctxlens);
  absl::StatusOr<v1::LoglikelihoodResponse> grpc = server_->grpc->Loglikelihood(grpc_request);
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  ASSERT_EQ(parsed.size(), pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_EQ(parsed[i].first, grpc->results(i).logprob()) << "pair " << i;
    EXPECT_EQ(parsed[i].second, grpc->results(i).is_greedy()) << "pair " << i;
    // The echoed prompt: first position has no log-probability, one token generated.
    const Json& choice = reply.body["choices"][i];
    EXPECT_TRUE(choice["logprobs"]["token_logprobs"][0].is_null());
    EXPECT_EQ(choice["logprobs"]["tokens"].size(), prompts[i].size() + 1);
    EXPECT_EQ(choice["logprobs"]["text_offset"].size(), prompts[i].size() + 1);
  }
  EXPECT_EQ(reply.body["usage"]["completion_tokens"], pairs.size());

  // batch_size=1 sends one pair per call, and max_tokens=0 (no generated token) parses
  // the same way once lm-eval's trailing [:-1] is accounted for.
  for (size_t i = 0; i < pairs.size(); ++i) {
    HttpReply single = server_->Complete(LoglikelihoodPayload(Json::array({prompts[i]})));
    ASSERT_EQ(single.status, 200) << single.body;
    EXPECT_EQ(ParseLogprobs(single.body, {ctxlens[i]})[0].first, grpc->results(i).logprob());
    Json no_generation = LoglikelihoodPayload(Json::array({prompts[i]}));
    no_generation["max_tokens"] = 0;
    HttpReply echoed = server_->Complete(no_generation);
    ASSERT_EQ(echoed.status, 200) << echoed.body;
    Json& lps = echoed.body["choices"][0]["logprobs"]["token_logprobs"];
    EXPECT_EQ(lps.size(), prompts[i].size());
    lps.push_back(0.0);  // the position lm-eval drops
    EXPECT_EQ(ParseLogprobs(echoed.body, {ctxlens[i]})[0].first, grpc->results(i).logprob());
  }
}

TEST_F(OpenAiHttpTest, RemoteTokenizerGivesLmEvalTheServersEncoding) {
  // lm-eval's tokenizer_backend=remote (local-completions' `auto` picks it when
  // check_remote_tokenizer_support passes): /tokenizer_info must name eos_token, /tokenize
  // must answer {"prompt": "test", "add_special_tokens": false} with a token list.
  HttpReply info = server_->Send("GET", "/tokenizer_info", "");
  ASSERT_EQ(info.status, 200) << info.body;
  EXPECT_EQ(info.body["model"], "hgrn2");
  ASSERT_TRUE(info.body.contains("eos_token"));
  EXPECT_EQ(info.body["max_model_len"], 96);
  auto encode = [](const std::string& text) {
    HttpReply r = server_->Send("POST", "/tokenize",
                                Json{{"prompt", text}, {"add_special_tokens", false}}.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body["tokens"].get<std::vector<int32_t>>();
  };
  EXPECT_FALSE(encode("test").empty());
  // RemoteTokenizer.bos_token_id / eos_token_id: encode(token text)[0].
  const int32_t bos = encode(info.body["bos_token"].get<std::string>())[0];
  EXPECT_EQ(bos, tokenizer_->bos_id());
  EXPECT_EQ(encode(info.body["eos_token"].get<std::string>())[0], tokenizer_->eos_id());
  // TemplateLM._encode_pair over the remote encoding gives the tokens the server's own
  // lm-eval rule gives (so the payloads, and the numbers, are the ones tested above).
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"Once upon a time", " there was a little girl"},
      {"The cat sat on the ", "mat"},
      {"", "Lily liked to play outside."}};
  for (auto [context, continuation] : pairs) {
    SCOPED_TRACE(context + "|" + continuation);
    absl::StatusOr<lm_eval::TokenPair> want = lm_eval::EncodeLmEvalPair(
        *tokenizer_, context, continuation, /*add_bos=*/false, lm_eval::PrefixToken(*tokenizer_));
    ASSERT_TRUE(want.ok());
    std::vector<int32_t> context_enc, continuation_enc;
    if (context.empty()) {
      context_enc = {bos};  // prefix_token_id: bos_token_id or eos_token_id
      continuation_enc = encode(continuation);
    } else {
      const size_t kept = context.find_last_not_of(" \t\n\r\f\v") + 1;
      continuation = context.substr(kept) + continuation;
      context.resize(kept);
      const std::vector<int32_t> whole = encode(context + continuation);
      context_enc = encode(context);
      continuation_enc.assign(whole.begin() + static_cast<std::ptrdiff_t>(context_enc.size()),
                              whole.end());
    }
    EXPECT_EQ(context_enc, want->context);
    EXPECT_EQ(continuation_enc, want->continuation);
  }
  HttpReply decoded =
      server_->Send("POST", "/detokenize", Json{{"tokens", encode("Once upon a time")}}.dump());
  ASSERT_EQ(decoded.status, 200) << decoded.body;
  EXPECT_EQ(decoded.body["prompt"], "Once upon a time");
  // Errors as elsewhere.
  HttpReply unknown = server_->Send("GET", "/tokenizer_info?model=nope", "");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body["error"]["code"], "model_not_found");
  HttpReply bad = server_->Send("POST", "/tokenize", R"({"prompt": 5})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["param"], "prompt");
  bad = server_->Send("POST", "/detokenize", R"({"tokens": [1, 100000]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.body["error"]["message"].get<std::string>(), HasSubstr("outside the vocabulary"));
}

TEST_F(OpenAiHttpTest, AKeptAliveConnectionAnswersTokenizeWithoutNagleDelay) {
  // lm-eval's remote tokenizer calls /tokenize once per request on one requests.Session
  // (urllib3 sets TCP_NODELAY on its side). A server that leaves Nagle on sends its
  // headers and body in two segments and the second waits for the client's delayed ACK:
  // about 40 ms a call (issue 30).
  httplib::Client session("127.0.0.1", server_->http_port);
  session.set_keep_alive(true);
  session.set_tcp_nodelay(true);
  std::vector<double> ms;
  for (int i = 0; i < 51; ++i) {
    const absl::Time start = absl::Now();
    httplib::Result r =
        session.Post("/tokenize", R"({"prompt": "Once upon a time"})", "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    if (i > 0) ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));  // 0 connects
  }
  std::sort(ms.begin(), ms.end());
  EXPECT_LT(ms[ms.size() / 2], 5.0) << "median of 50 kept-alive /tokenize calls";
}

TEST_F(OpenAiHttpTest, AGreedyOneTokenCompletionTakesItsTokenFromTheScoringPass) {
  // lm-eval's loglikelihood payload (temperature 0, max_tokens 1, logprobs, echo) is
  // answered without a generation: the token is the argmax the scoring pass computes
  // after the prompt. It must be the token, text, log-probabilities and finish reason the
  // generation path gives; a stop string that never matches sends the same request
  // through that path.
  Json prompts = Json::array();
  for (const char* text : {"Once upon a time", "The cat sat on the", "Lily liked to",
                           "One day, Tim went to the park with his mom. He saw a big"}) {
    prompts.push_back(lm_eval::EncodeLmEvalText(*tokenizer_, text, /*add_bos=*/false).value());
  }
  for (const bool echo : {true, false}) {
    SCOPED_TRACE(echo);
    Json payload = {{"model", "hgrn2"}, {"prompt", prompts}, {"temperature", 0},
                    {"max_tokens", 1},  {"logprobs", 3},     {"echo", echo}};
    HttpReply fused = server_->Complete(payload);
    payload["stop"] = Json::array({"\u0001never"});
    HttpReply generated = server_->Complete(payload);
    ASSERT_EQ(fused.status, 200) << fused.body;
    ASSERT_EQ(generated.status, 200) << generated.body;
    ASSERT_EQ(fused.body["choices"].size(), prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      SCOPED_TRACE(i);
      const Json& a = fused.body["choices"][i];
      const Json& b = generated.body["choices"][i];
      EXPECT_EQ(a["text"], b["text"]);
      EXPECT_EQ(a["finish_reason"], b["finish_reason"]);
      EXPECT_EQ(a["logprobs"], b["logprobs"]);
    }
    EXPECT_EQ(fused.body["usage"], generated.body["usage"]);
  }
}

TEST_F(OpenAiHttpTest, RollingWindowsEqualTheGrpcPathBitForBit) {
  const std::string text =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in "
      "the sunshine. One day, she saw a big, red ball in the park. She ran to it and kicked "
      "it high into the sky. Her friend Tom came to play with her, and they laughed all "
      "day until the sun went down.";
  // TemplateAPI.loglikelihood_rolling: windows of max_seq_len = self.max_length - 1 over
  // tok_encode(string), each sent as a loglikelihood input; the string's value is the sum.
  const int window = kSelfMaxLength - 1;
  absl::StatusOr<std::vector<int32_t>> ids =
      lm_eval::EncodeLmEvalText(*tokenizer_, text, /*add_bos=*/false);
  ASSERT_TRUE(ids.ok()) << ids.status();
  std::vector<lm_eval::TokenPair> windows =
      lm_eval::MakeRollingWindows(*ids, lm_eval::PrefixToken(*tokenizer_), window);
  ASSERT_GE(windows.size(), 3u);
  Json prompts = Json::array();
  std::vector<int> ctxlens;
  for (const lm_eval::TokenPair& w : windows) AddLmEvalInput(w, &prompts, &ctxlens);
  HttpReply reply = server_->Complete(LoglikelihoodPayload(prompts));
  ASSERT_EQ(reply.status, 200) << reply.body;
  double string_nll = 0;
  for (const auto& [logprob, greedy] : ParseLogprobs(reply.body, ctxlens)) string_nll += logprob;

  v1::LoglikelihoodRollingRequest grpc_request;
  grpc_request.set_model("hgrn2");
  grpc_request.set_bos_mode(v1::BOS_MODE_NONE);
  grpc_request.set_max_length(window);
  grpc_request.set_no_cache(true);
  grpc_request.add_inputs()->set_text(text);
  absl::StatusOr<v1::LoglikelihoodRollingResponse> grpc =
      server_->grpc->LoglikelihoodRolling(grpc_request);
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  EXPECT_EQ(grpc->results(0).windows(), static_cast<int>(windows.size()));
  EXPECT_EQ(string_nll, grpc->results(0).logprob());
}

TEST_F(OpenAiHttpTest, GenerateUntilEqualsTheGrpcPath) {
  const std::string context = "Once upon a time, there was a";
  const int max_gen_toks = 16;
  absl::StatusOr<std::vector<int32_t>> ids =
      lm_eval::EncodeLmEvalText(*tokenizer_, context, /*add_bos=*/false);
  ASSERT_TRUE(ids.ok());
  std::vector<int32_t> encoding = *ids;
  const size_t max_context = kSelfMaxLength - max_gen_toks;  // encodings_list[-max_ctx:]
  if (encoding.size() > max_context) encoding.erase(encoding.begin(), encoding.end() - max_context);
  // LocalCompletionsAPI._create_payload(generate=True): until plus the EOS string.
  const std::vector<std::string> stop = {".", "\n\n", "</s>"};
  Json payload = {{"prompt", Json::array({encoding})},
                  {"model", "hgrn2"},
                  {"max_tokens", max_gen_toks},
                  {"temperature", 0},
                  {"stop", stop},
                  {"seed", 1234}};
  HttpReply reply = server_->Complete(payload);
  ASSERT_EQ(reply.status, 200) << reply.body;

  v1::GenerateRequest grpc_request;
  grpc_request.set_model("hgrn2");
  for (int32_t id : encoding) grpc_request.add_prompt_ids(id);
  grpc_request.set_max_tokens(max_gen_toks);
  for (const std::string& s : stop) grpc_request.add_until(s);
  absl::StatusOr<v1::GenerateResponse> grpc = server_->grpc->Generate(grpc_request);
  ASSERT_TRUE(grpc.ok()) << grpc.status();
  EXPECT_EQ(reply.body["choices"][0]["text"], grpc->text());
  EXPECT_EQ(reply.body["choices"][0]["logprobs"], nullptr);
  EXPECT_EQ(reply.body["usage"]["completion_tokens"], grpc->token_ids_size());

  // batch_size > 1: several prompts in one call, generated together, one choice each.
  std::vector<std::vector<int32_t>> batch = {encoding, {1, 40, 41}, {1, 300, 301, 302, 303}};
  payload["prompt"] = batch;
  HttpReply batched = server_->Complete(payload);
  ASSERT_EQ(batched.status, 200) << batched.body;
  ASSERT_EQ(batched.body["choices"].size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    v1::GenerateRequest one = grpc_request;
    one.clear_prompt_ids();
    for (int32_t id : batch[i]) one.add_prompt_ids(id);
    one.set_no_cache(true);  // computed alone, not read back from the batched call
    absl::StatusOr<v1::GenerateResponse> alone = server_->grpc->Generate(one);
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(batched.body["choices"][i]["index"], i);
    EXPECT_EQ(batched.body["choices"][i]["text"], alone->text()) << "prompt " << i;
  }

  // tokenized_requests=False with batch_size=1: the context string itself; the server
  // encodes it with the tokenizer's special tokens, as the gRPC default does.
  payload["prompt"] = context;
  HttpReply text_reply = server_->Complete(payload);
  ASSERT_EQ(text_reply.status, 200) << text_reply.body;
  v1::GenerateRequest text_request = grpc_request;
  text_request.clear_prompt_ids();
  text_request.set_prompt(context);
  absl::StatusOr<v1::GenerateResponse> grpc_text = server_->grpc->Generate(text_request);
  ASSERT_TRUE(grpc_text.ok()) << grpc_text.status();
  EXPECT_EQ(text_reply.body["choices"][0]["text"], grpc_text->text());
}

TEST_F(OpenAiHttpTest, ConcurrentClientsGetTheAnswersOfOneClient) {
  // lm-eval's num_concurrent > 1: calls in flight at once share the scheduler's batches;
  // each answer equals what a lone gRPC call computes (no_cache) for the same tokens.
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 8; ++i) {
    prompts.emplace_back();
    for (int k = 0; k < 10 + 3 * i; ++k) prompts.back().push_back((k * 37 + i * 11) % 500 + 3);
  }
  std::vector<HttpReply> together(prompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      Json payload = LoglikelihoodPayload(Json::array({prompts[i]}));
      payload["max_tokens"] = 0;
      together[i] = server_->Complete(payload);
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_EQ(together[i].status, 200) << together[i].body;
    v1::LoglikelihoodRequest alone;
    alone.set_model("hgrn2");
    alone.set_no_cache(true);
    alone.set_return_token_logprobs(true);
    v1::LoglikelihoodPair* pair = alone.add_pairs();
    pair->add_context_ids(prompts[i][0]);
    for (size_t k = 1; k < prompts[i].size(); ++k) pair->add_continuation_ids(prompts[i][k]);
    absl::StatusOr<v1::LoglikelihoodResponse> grpc = server_->grpc->Loglikelihood(alone);
    ASSERT_TRUE(grpc.ok()) << grpc.status();
    const Json& lps = together[i].body["choices"][0]["logprobs"]["token_logprobs"];
    ASSERT_EQ(lps.size(), prompts[i].size());
    for (size_t k = 1; k < prompts[i].size(); ++k) {
      EXPECT_EQ(lps[k].get<double>(), grpc->results(0).token_logprobs(static_cast<int>(k - 1)))
          << "client " << i << " position " << k;
    }
  }
}

TEST_F(OpenAiHttpTest, BadBodiesGetOpenAiErrorsAndTheServerStaysUp) {
  struct Case {
    std::string body;
    int status;
    std::string message;
    Json param;
    std::string code;
  };
  const std::string too_long = Json{
      {"model", "hgrn2"},
      {"prompt", std::vector<int>(200, 5)},
      {"max_tokens", 1},
      {"echo", true},
      {"logprobs", 1}}.dump();
  const std::vector<Case> cases = {
      {"{\"model\": \"hgrn2\"", 400, "not valid JSON", nullptr, "invalid_argument"},
      {"[1, 2]", 400, "must be a JSON object", nullptr, "invalid_argument"},
      {R"({"model": "hgrn2"})", 400, "prompt is required", "prompt", "invalid_argument"},
      {R"({"prompt": "x"})", 400, "model is required", "model", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": 5})", 400, "prompt must be", "prompt", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": [[1, "a"]]})", 400, "prompt must be", "prompt",
       "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": []})", 400, "empty array", "prompt", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "max_tokens": "16"})", 400,
       "max_tokens must be an integer", "max_tokens", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "max_tokens": -1})", 400, "max_tokens must be >= 0",
       "max_tokens", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "echo": "yes"})", 400, "echo must be a boolean", "echo",
       "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "temperature": "hot"})", 400,
       "temperature must be a number", "temperature", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "stop": 3})", 400, "stop must be", "stop",
       "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "logprobs": true})", 400, "logprobs must be",
       "logprobs", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "n": 2})", 400, "n must be 1", "n", "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "stream": true})", 400, "stream is not supported",
       "stream", "invalid_argument"},
      {R"({"model": 7, "prompt": "x"})", 400, "model must be a string", "model",
       "invalid_argument"},
      {R"({"model": "nope", "prompt": "x"})", 404, "unknown model 'nope'", nullptr,
       "model_not_found"},
      {R"({"model": "hgrn2", "prompt": [1, 100000], "max_tokens": 1})", 400,
       "outside the vocabulary", nullptr, "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": [1, 2, 3], "max_tokens": 0, "echo": true, "logprobs": 1000})",
       400, "top_k must be in [0, 100]", nullptr, "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "max_tokens": 3, "temperature": -1})", 400,
       "temperature must be", nullptr, "invalid_argument"},
      {R"({"model": "hgrn2", "prompt": "x", "max_tokens": 100000})", 400, "max_tokens", nullptr,
       "resource_exhausted"},
      {too_long, 400, "limit of 96 tokens per sequence", nullptr, "context_length_exceeded"},
      {"{\"model\": \"hgrn2\", \"prompt\": \"\xff\"}", 400, "not valid JSON", nullptr,
       "invalid_argument"},
      {Json{{"model", "hgrn2"}, {"prompt", std::string(2 << 20, 'a')}}.dump(), 413,
       "larger than this server accepts", nullptr, "invalid_argument"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.substr(0, 120));
    HttpReply reply = server_->Send("POST", "/v1/completions", c.body);
    EXPECT_EQ(reply.status, c.status) << reply.body;
    ASSERT_TRUE(reply.body.is_object()) << reply.body;
    const Json& error = reply.body["error"];
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(c.message));
    EXPECT_EQ(error["param"], c.param);
    EXPECT_EQ(error["code"], c.code);
    EXPECT_EQ(error["type"], "invalid_request_error");
  }
  // curl -d without a JSON content type sends a form, which cpp-httplib caps at 8 KiB.
  {
    httplib::Client http("127.0.0.1", server_->http_port);
    httplib::Result form = http.Post(
        "/v1/completions", Json{{"model", "hgrn2"}, {"prompt", std::string(9000, 'a')}}.dump(),
        "application/x-www-form-urlencoded");
    ASSERT_TRUE(form);
    EXPECT_EQ(form->status, 413);
    EXPECT_THAT(form->body, HasSubstr("send it with Content-Type: application/json"));
  }
  HttpReply route = server_->Send("GET", "/v1/engines", "");
  EXPECT_EQ(route.status, 404);
  EXPECT_THAT(route.body["error"]["message"].get<std::string>(), HasSubstr("no route"));
  // Still serving, on both doors.
  EXPECT_TRUE(server_->process->running());
  EXPECT_EQ(server_->Send("GET", "/v1/models", "").status, 200);
  EXPECT_TRUE(server_->grpc->ListModels().ok());
}

TEST(OpenAiHttpAuthTest, TheBearerTokenGuardsTheHttpRoute) {
  const std::string dir = testing::MakeTempDir("openai-http-auth");
  std::ofstream(dir + "/token") << "s3cret\n";
  std::unique_ptr<HttpServer> server =
      HttpServer::Start("openai-http-auth", {"--auth_token_file=" + dir + "/token"}, "s3cret");
  ASSERT_NE(server, nullptr);
  const Json payload = {
      {"model", "hgrn2"}, {"prompt", "Once"}, {"max_tokens", 2}, {"temperature", 0}};
  // A header gRPC could not carry as metadata (non-ASCII) is refused like a wrong token.
  for (const std::string& header :
       {std::string(), std::string("Bearer wrong"), std::string("Bearer s3cr\xc3\xa9t")}) {
    HttpReply reply = server->Complete(payload, header);
    EXPECT_EQ(reply.status, 401) << reply.body;
    EXPECT_EQ(reply.body["error"]["type"], "authentication_error");
    EXPECT_EQ(reply.body["error"]["code"], "invalid_api_key");
    EXPECT_EQ(server->Send("GET", "/v1/models", "", header).status, 401);
  }
  for (const std::string& path : {"/tokenize", "/detokenize"}) {
    EXPECT_EQ(server->Send("POST", path, R"({"prompt": "a", "tokens": [1]})").status, 401);
    EXPECT_EQ(
        server->Send("POST", path, R"({"prompt": "a", "tokens": [1]})", "Bearer s3cret").status,
        200);
  }
  EXPECT_EQ(server->Send("GET", "/tokenizer_info", "").status, 401);
  HttpReply ok = server->Complete(payload, "Bearer s3cret");
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(server->Send("GET", "/v1/models", "", "Bearer s3cret").status, 200);
  server->process->Stop(SIGTERM);
}

}  // namespace
}  // namespace hgeval
