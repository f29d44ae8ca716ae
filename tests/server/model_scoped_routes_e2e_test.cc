// Model-scoped HTTP routes (issue 30): on a server with two models, /models/<name>/...
// serves that model on every route (lm-eval's remote tokenizer never names the model, so
// its base_url does), equal to the unscoped route naming the model; the unscoped
// tokenizer routes still ask for a model there; a body naming another model than the
// path is refused.
#include <httplib.h>

#include <memory>
#include <string>

#include "client/client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;

struct Reply {
  int status = 0;
  Json body;
};

class ModelScopedRoutesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess();
    absl::StatusOr<int> port = testing::StartWithHttp(
        *server_, "model-scoped-routes",
        {"--model=hgrn2=" + testing::SourcePath("tests/golden/hgrn2") +
             ",stories=" + testing::SourcePath("data/models/stories260K/stories260K.bin"),
         "--tokenizer=" + testing::SourcePath("data/models/stories260K/tok512.bin"),
         "--store=:memory:", "--threads=1"});
    ASSERT_TRUE(port.ok()) << port.status();
    http_port_ = *port;
  }
  static void TearDownTestSuite() { delete server_; }

  static Reply Get(const std::string& path) {
    httplib::Client http("127.0.0.1", http_port_);
    httplib::Result r = http.Get(path);
    if (!r) return {};
    return {r->status, Json::parse(r->body, nullptr, false)};
  }
  static Reply Post(const std::string& path, const Json& body) {
    httplib::Client http("127.0.0.1", http_port_);
    httplib::Result r = http.Post(path, body.dump(), "application/json");
    if (!r) return {};
    return {r->status, Json::parse(r->body, nullptr, false)};
  }

  static testing::ServerProcess* server_;
  static int http_port_;
};

testing::ServerProcess* ModelScopedRoutesTest::server_ = nullptr;
int ModelScopedRoutesTest::http_port_ = 0;

TEST_F(ModelScopedRoutesTest, TheRemoteTokenizerWorksUnderEachModelsPath) {
  // Unscoped, lm-eval's calls name no model: two models, so the server asks for one.
  EXPECT_EQ(Get("/tokenizer_info").status, 400);
  EXPECT_EQ(Post("/tokenize", {{"prompt", "Once upon a time"}}).status, 400);
  for (const std::string model : {"hgrn2", "stories"}) {
    SCOPED_TRACE(model);
    const std::string base = "/models/" + model;
    const Reply info = Get(base + "/tokenizer_info");
    ASSERT_EQ(info.status, 200) << info.body;
    EXPECT_EQ(info.body["model"], model);
    EXPECT_EQ(info.body, Get("/tokenizer_info?model=" + model).body);
    const Json tokenize = {{"prompt", "Once upon a time"}, {"add_special_tokens", false}};
    Json named = tokenize;
    named["model"] = model;
    const Reply scoped = Post(base + "/tokenize", tokenize);
    ASSERT_EQ(scoped.status, 200) << scoped.body;
    EXPECT_FALSE(scoped.body["tokens"].empty());
    EXPECT_EQ(scoped.body, Post("/tokenize", named).body);
    EXPECT_EQ(Post(base + "/tokenize", named).status, 200);
    const Reply text = Post(base + "/detokenize", {{"tokens", scoped.body["tokens"]}});
    ASSERT_EQ(text.status, 200) << text.body;
    EXPECT_EQ(text.body["prompt"], "Once upon a time");
    const Reply listed = Get(base + "/v1/models");
    ASSERT_EQ(listed.status, 200) << listed.body;
    ASSERT_EQ(listed.body["data"].size(), 1u);
    EXPECT_EQ(listed.body["data"][0]["id"], model);
  }
  EXPECT_EQ(Get("/v1/models").body["data"].size(), 2u);
}

TEST_F(ModelScopedRoutesTest, CompletionsUnderAModelsPathScoreThatModel) {
  // lm-eval's loglikelihood payload.
  Json payload = {{"prompt", Json::array({Json::array({1, 403, 407, 261, 378})})},
                  {"max_tokens", 1},
                  {"temperature", 0},
                  {"logprobs", 1},
                  {"echo", true}};
  for (const std::string model : {"hgrn2", "stories"}) {
    SCOPED_TRACE(model);
    Json named = payload;
    named["model"] = model;
    const Reply scoped = Post("/models/" + model + "/v1/completions", named);
    const Reply unscoped = Post("/v1/completions", named);
    ASSERT_EQ(scoped.status, 200) << scoped.body;
    ASSERT_EQ(unscoped.status, 200) << unscoped.body;
    EXPECT_EQ(scoped.body["model"], model);
    EXPECT_EQ(scoped.body["choices"], unscoped.body["choices"]);
    // The path may stand for the body's model.
    const Reply bare = Post("/models/" + model + "/v1/completions", payload);
    ASSERT_EQ(bare.status, 200) << bare.body;
    EXPECT_EQ(bare.body["choices"], unscoped.body["choices"]);
  }
  // The two models differ, so the routes did not serve one model for both.
  Json a = payload, b = payload;
  a["model"] = "hgrn2";
  b["model"] = "stories";
  EXPECT_NE(Post("/v1/completions", a).body["choices"], Post("/v1/completions", b).body["choices"]);
  // A body naming another model than the path.
  const Reply mismatch = Post("/models/stories/v1/completions", a);
  EXPECT_EQ(mismatch.status, 400) << mismatch.body;
  EXPECT_EQ(mismatch.body["error"]["param"], "model");
  EXPECT_NE(Post("/models/nosuch/tokenize", {{"prompt", "x"}}).status, 200);
  EXPECT_EQ(Post("/models//tokenize", {{"prompt", "x"}}).status, 404);
}

}  // namespace
}  // namespace hgeval
