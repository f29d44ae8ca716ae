// One stop rule and one continuation text on every generation route (issue 30): for the
// same greedy generation on stories260K, `hgeval-engine generate`, the server's gRPC
// Generate and its HTTP /v1/completions give the same text (the exact continuation, its
// leading space kept) and the same finish reason, whether a stop string (`until`/`stop`)
// or the llama2.c sample end (BOS) ends it; the HTTP response's text_offset agrees.
#include <httplib.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"
#include "tests/support/shell_command.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;
namespace v1 = ::hgeval::v1;

std::string Stories() { return testing::SourcePath("data/models/stories260K/stories260K.bin"); }

// hgeval-engine generate --json's answer.
Json EngineGenerate(const std::string& prompt, int max_tokens, const std::string& until) {
  std::string command = std::string(HGEVAL_BINARY_DIR) +
                        "/engine/tools/hgeval-engine generate --json --model='" + Stories() +
                        "' --prompt='" + prompt + "' --max_tokens=" + std::to_string(max_tokens);
  if (!until.empty()) command += " --until='" + until + "'";
  const testing::ShellResult run = testing::RunShell(command + " 2>/dev/null");
  if (run.exit_code != 0) return Json();
  return Json::parse(run.out, nullptr, /*allow_exceptions=*/false);
}

std::string GrpcReason(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_STOP_TOKEN:
      return "stop_token";
    case v1::FINISH_REASON_STOP_STRING:
      return "stop_string";
    case v1::FINISH_REASON_LENGTH:
      return "length";
    default:
      return "other";
  }
}

int64_t CodePoints(const std::string& text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

class GenerationRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess();
    absl::StatusOr<int> port = testing::StartWithHttp(
        *server_, "generation-routes",
        {"--model=stories=" + Stories(),
         "--tokenizer=" + testing::SourcePath("data/models/stories260K/tok512.bin"),
         "--store=:memory:", "--threads=1"});
    ASSERT_TRUE(port.ok()) << port.status();
    http_port_ = *port;
    grpc_ = testing::ConnectClient(server_->address()).release();
  }
  static void TearDownTestSuite() {
    delete grpc_;
    delete server_;
  }

  // Runs the generation on the three routes and checks they agree; returns the engine's.
  static Json ExpectRoutesAgree(const std::string& prompt, int max_tokens,
                                const std::string& until) {
    const Json engine = EngineGenerate(prompt, max_tokens, until);
    EXPECT_TRUE(engine.is_object()) << "hgeval-engine generate failed";
    if (!engine.is_object()) return engine;

    v1::GenerateRequest request;
    request.set_model("stories");
    request.set_prompt(prompt);
    request.set_max_tokens(max_tokens);
    if (!until.empty()) request.add_until(until);
    absl::StatusOr<v1::GenerateResponse> grpc = grpc_->Generate(request);
    EXPECT_TRUE(grpc.ok()) << grpc.status();
    if (!grpc.ok()) return engine;
    EXPECT_EQ(grpc->text(), engine["text"].get<std::string>());
    EXPECT_EQ(GrpcReason(grpc->finish_reason()), engine["finish_reason"].get<std::string>());
    EXPECT_EQ(std::vector<int32_t>(grpc->token_ids().begin(), grpc->token_ids().end()),
              engine["tokens"].get<std::vector<int32_t>>());

    Json body = {{"model", "stories"},
                 {"prompt", prompt},
                 {"max_tokens", max_tokens},
                 {"temperature", 0},
                 {"logprobs", 1}};
    if (!until.empty()) body["stop"] = Json::array({until});
    httplib::Client http("127.0.0.1", http_port_);
    httplib::Result reply = http.Post("/v1/completions", body.dump(), "application/json");
    EXPECT_TRUE(reply && reply->status == 200) << (reply ? reply->body : "no answer");
    if (!reply || reply->status != 200) return engine;
    const Json choice = Json::parse(reply->body)["choices"][0];
    EXPECT_EQ(choice["text"].get<std::string>(), engine["text"].get<std::string>());
    const std::string reason = engine["finish_reason"].get<std::string>();
    EXPECT_EQ(choice["finish_reason"].get<std::string>(), reason == "length" ? "length" : "stop");
    // text_offset: the first generated token starts right after the prompt, and each
    // token's offset advances by its text (the shown tokens may run past a stop string).
    const Json& offsets = choice["logprobs"]["text_offset"];
    EXPECT_FALSE(offsets.empty());
    if (!offsets.empty()) EXPECT_EQ(offsets[0].get<int64_t>(), CodePoints(prompt));
    return engine;
  }

  static testing::ServerProcess* server_;
  static client::Client* grpc_;
  static int http_port_;
};

testing::ServerProcess* GenerationRoutesTest::server_ = nullptr;
client::Client* GenerationRoutesTest::grpc_ = nullptr;
int GenerationRoutesTest::http_port_ = 0;

TEST_F(GenerationRoutesTest, AStopStringEndsEveryRouteWithStopString) {
  const Json engine = ExpectRoutesAgree("Lily", 200, "park");
  EXPECT_EQ(engine["finish_reason"], "stop_string");
  EXPECT_EQ(engine["text"], " and Tom were playing in the ");  // the leading space kept
}

TEST_F(GenerationRoutesTest, TheLlama2cSampleEndStopsEveryRoute) {
  // stories260K ends this story with BOS (llama2.c's sample delimiter) after 187 tokens.
  const Json engine = ExpectRoutesAgree("The dog", 400, "");
  EXPECT_EQ(engine["finish_reason"], "stop_token");
  EXPECT_LT(engine["tokens"].size(), 400u);
}

TEST_F(GenerationRoutesTest, AGreedyOneTokenCompletionKeepsItsLeadingSpace) {
  // HTTP takes this token from the scoring pass; its text is still the exact continuation.
  const Json engine = ExpectRoutesAgree("Lily", 1, "");
  EXPECT_EQ(engine["text"], " and");
}

TEST_F(GenerationRoutesTest, AStopTokenTakenFromTheScoringPassIsShownForLmEval) {
  // The story after "The dog" ends with BOS: lm-eval's loglikelihood payload over that
  // whole story gets BOS as its one generated token, shown with its log-probability (lm-eval
  // drops the last shown position), finish_reason "stop" and no text.
  const Json engine = EngineGenerate("The dog", 400, "");
  ASSERT_EQ(engine["finish_reason"], "stop_token");
  httplib::Client http("127.0.0.1", http_port_);
  httplib::Result tokenized =
      http.Post("/tokenize", Json{{"prompt", "The dog"}}.dump(), "application/json");
  ASSERT_TRUE(tokenized && tokenized->status == 200);
  std::vector<int32_t> prompt = Json::parse(tokenized->body)["tokens"];
  for (int32_t id : engine["tokens"]) prompt.push_back(id);
  const Json body = {{"model", "stories"}, {"prompt", Json::array({prompt})},
                     {"max_tokens", 1},    {"temperature", 0},
                     {"logprobs", 1},      {"echo", true}};
  httplib::Result reply = http.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(reply && reply->status == 200) << (reply ? reply->body : "no answer");
  const Json choice = Json::parse(reply->body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop");
  const Json& logprobs = choice["logprobs"];
  ASSERT_EQ(logprobs["token_logprobs"].size(), prompt.size() + 1);
  EXPECT_TRUE(logprobs["token_logprobs"].back().is_number());
  // The text is the echoed prompt alone: the stop token adds none.
  EXPECT_EQ(choice["text"].get<std::string>().size(), logprobs["text_offset"].back().get<size_t>());
}

}  // namespace
}  // namespace hgeval
