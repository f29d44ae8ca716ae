// End to end: a real hgeval-server process on loopback (golden HGRN2 checkpoint + the
// tok512 tokenizer), the real client library and CLI. Results must equal the engine's own
// for the same inputs; every error case has its code and message checked.
#include <signal.h>

#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/core/request_prep.h"
#include "tasks/models/engine_language_model.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

std::vector<std::string> GoldenArgs(const std::string& dir) {
  std::vector<std::string> args = testing::GoldenServerArgs(dir);
  args.push_back("--shutdown_grace_ms=0");
  return args;
}

// One server for the whole suite (start-up costs are paid once).
class ServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("service-e2e"));
    server_ = new ServerProcess();
    std::vector<std::string> args = GoldenArgs(*dir_);
    args.push_back("--max_sequence_tokens=96");
    args.push_back("--max_request_pairs=64");
    args.push_back("--preload=all");
    ASSERT_TRUE(server_->Start(*dir_, args).ok());
    client::ClientOptions options;
    options.servers = {server_->address()};
    options.timeout = absl::Seconds(60);
    client_ = client::Client::Connect(options)->release();
    ASSERT_TRUE(client_->WaitServing(absl::Seconds(30)).ok());
    auto model = LoadModel(SourcePath("tests/golden/hgrn2"), {});
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
    tokenizer_ = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"))->release();
  }
  static void TearDownTestSuite() {
    delete client_;
    if (server_ != nullptr) server_->Stop(SIGTERM);
    delete server_;
  }

  static v1::LoglikelihoodRequest IdsRequest(std::vector<std::vector<int32_t>> contexts,
                                             std::vector<std::vector<int32_t>> continuations) {
    v1::LoglikelihoodRequest request;
    request.set_model("hgrn2");
    for (size_t i = 0; i < contexts.size(); ++i) {
      v1::LoglikelihoodPair* p = request.add_pairs();
      for (int32_t id : contexts[i]) p->add_context_ids(id);
      for (int32_t id : continuations[i]) p->add_continuation_ids(id);
    }
    return request;
  }

  static std::string* dir_;
  static ServerProcess* server_;
  static client::Client* client_;
  static Model* model_;
  static Tokenizer* tokenizer_;
};
std::string* ServiceTest::dir_ = nullptr;
ServerProcess* ServiceTest::server_ = nullptr;
client::Client* ServiceTest::client_ = nullptr;
Model* ServiceTest::model_ = nullptr;
Tokenizer* ServiceTest::tokenizer_ = nullptr;

void ExpectStatus(const absl::Status& status, absl::StatusCode code, const std::string& message) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(message));
}

TEST_F(ServiceTest, ListModelsDescribesTheModel) {
  auto models = client_->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->models_size(), 1);
  const v1::ModelInfo& m = models->models(0);
  EXPECT_EQ(m.name(), "hgrn2");
  EXPECT_EQ(m.family(), "hgrn2");
  EXPECT_EQ(m.vocab_size(), 512);
  EXPECT_EQ(m.max_sequence_tokens(), 96);
  // The engine's checkpoint content hash, as hgeval-eval records it.
  EXPECT_EQ(m.model_hash(),
            (*OpenModelCheckpoint(SourcePath("tests/golden/hgrn2")))->ContentHash());
  EXPECT_EQ(m.tokenizer_hash(), tokenizer_->ContentHash());
  EXPECT_TRUE(m.loaded());
}

TEST_F(ServiceTest, LoglikelihoodEqualsTheEngine) {
  std::vector<std::vector<int32_t>> ctx = {{1, 50, 60}, {1}, {7, 8, 9, 10, 11, 12}, {300}};
  std::vector<std::vector<int32_t>> cont = {{70, 80}, {2, 3, 4, 5}, {13}, {301, 302, 303}};
  v1::LoglikelihoodRequest request = IdsRequest(ctx, cont);
  request.set_return_token_logprobs(true);
  request.set_top_k(3);
  request.set_no_cache(true);
  auto response = client_->Loglikelihood(request);
  ASSERT_TRUE(response.ok()) << response.status();
  std::vector<ScoreRequest> engine_requests;
  for (size_t i = 0; i < ctx.size(); ++i) {
    ScoreRequest r;
    r.context = ctx[i];
    r.continuation = cont[i];
    r.top_k = 3;
    engine_requests.push_back(r);
  }
  auto expected = Score(*model_, engine_requests);
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(response->results_size(), 4);
  for (int i = 0; i < 4; ++i) {
    const v1::LoglikelihoodResult& got = response->results(i);
    EXPECT_EQ(got.logprob(), (*expected)[i].logprob) << i;
    EXPECT_EQ(got.is_greedy(), (*expected)[i].is_greedy) << i;
    EXPECT_EQ(got.continuation_tokens(), static_cast<int>(cont[i].size()));
    EXPECT_EQ(got.context_tokens(), static_cast<int>(ctx[i].size()));
    ASSERT_EQ(got.token_logprobs_size(), static_cast<int>(cont[i].size()));
    for (size_t t = 0; t < cont[i].size(); ++t) {
      EXPECT_EQ(got.token_logprobs(t), (*expected)[i].token_logprobs[t]);
      ASSERT_EQ(got.top_k(t).ids_size(), 3);
      EXPECT_EQ(got.top_k(t).ids(0), (*expected)[i].top_k[t][0].token);
      EXPECT_EQ(got.top_k(t).logprobs(0), (*expected)[i].top_k[t][0].logprob);
    }
    EXPECT_FALSE(got.cached());
  }
}

TEST_F(ServiceTest, TextPairsUseLmEvalTokenizationAndRepeatsComeFromTheStore) {
  v1::LoglikelihoodRequest request;
  request.set_model("hgrn2");
  request.set_bos_mode(v1::BOS_MODE_NONE);  // lm-eval <= 0.4.9.1 (the default is TOKENIZER)
  v1::LoglikelihoodPair* p = request.add_pairs();
  p->set_context("Once upon a ");
  p->set_continuation("time there was");
  auto first = client_->Loglikelihood(request);
  ASSERT_TRUE(first.ok()) << first.status();
  server::PairLimits limits{512, 96, false, "hgrn2"};
  auto tokens =
      server::PreparePair(server::ToPairInput(request.pairs(0)), 0, *tokenizer_, false, limits);
  ASSERT_TRUE(tokens.ok());
  std::vector<int32_t> whole = *tokenizer_->Encode("Once upon a time there was", false);
  EXPECT_EQ(tokens->context, *tokenizer_->Encode("Once upon a", false));
  EXPECT_EQ(tokens->continuation,
            std::vector<int32_t>(whole.begin() + tokens->context.size(), whole.end()));
  auto expected = Score(*model_, {ScoreRequest{nullptr, tokens->context, tokens->continuation}});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(first->results(0).logprob(), (*expected)[0].logprob);
  auto second = client_->Loglikelihood(request);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->results(0).cached());
  EXPECT_EQ(second->results(0).logprob(), first->results(0).logprob());
  EXPECT_EQ(second->results(0).is_greedy(), first->results(0).is_greedy());
  // Left unset, bos_mode is lm-eval >= 0.4.9.2's rule, the default of every route.
  request.clear_bos_mode();
  auto unset = client_->Loglikelihood(request);
  request.set_bos_mode(v1::BOS_MODE_TOKENIZER);
  auto tokenizer_mode = client_->Loglikelihood(request);
  ASSERT_TRUE(unset.ok() && tokenizer_mode.ok());
  EXPECT_EQ(unset->results(0).logprob(), tokenizer_mode->results(0).logprob());
  EXPECT_EQ(unset->results(0).context_tokens(), tokens->context.size() + 1);  // + BOS
}

// The RPC route and the in-process evaluator score the cases where their rules used to
// differ identically, in both BOS regimes: a context ending in Unicode whitespace (the
// server used to strip ASCII only), text starting with the BOS text (only the evaluator
// applied lm-eval's has_bos_prefix), an empty and a whitespace-only context.
TEST_F(ServiceTest, TextPairsScoreAsTheInProcessEvaluatorInBothBosRegimes) {
  const std::string bos_text = tokenizer_->IdToPiece(tokenizer_->bos_id());
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"Once upon a\xe3\x80\x80", "time"},
      {"The cat\xc2\xa0", "sat"},
      {bos_text + "Once upon a", " time"},
      {"", "Once upon a time"},
      {"  ", "Lily"}};
  for (const bool bos : {false, true}) {
    SCOPED_TRACE(bos ? "BOS_MODE_TOKENIZER" : "BOS_MODE_NONE");
    v1::LoglikelihoodRequest request;
    request.set_model("hgrn2");
    request.set_no_cache(true);
    request.set_bos_mode(bos ? v1::BOS_MODE_TOKENIZER : v1::BOS_MODE_NONE);
    std::vector<tasks::LoglikelihoodRequest> local;
    for (const auto& [context, continuation] : pairs) {
      v1::LoglikelihoodPair* p = request.add_pairs();
      p->set_context(context);
      p->set_continuation(continuation);
      local.push_back({context, continuation});
    }
    auto remote = client_->Loglikelihood(request);
    ASSERT_TRUE(remote.ok()) << remote.status();
    tasks::EngineLanguageModelOptions options;
    options.bos_regime = bos ? tasks::BosRegime::kTokenizer : tasks::BosRegime::kNone;
    options.max_length = 96;
    tasks::EngineLanguageModel lm(model_, tokenizer_, options);
    auto in_process = lm.Loglikelihood(local);
    ASSERT_TRUE(in_process.ok()) << in_process.status();
    for (size_t i = 0; i < pairs.size(); ++i) {
      EXPECT_EQ(remote->results(static_cast<int>(i)).logprob(), (*in_process)[i].logprob) << i;
      EXPECT_EQ(remote->results(static_cast<int>(i)).is_greedy(), (*in_process)[i].is_greedy) << i;
    }
  }
}

TEST_F(ServiceTest, RollingEqualsTheEngineOverLmEvalWindows) {
  std::vector<int32_t> ids;
  for (int i = 0; i < 200; ++i) ids.push_back((i * 37 + 11) % 500 + 3);
  v1::LoglikelihoodRollingRequest request;
  request.set_model("hgrn2");
  request.set_max_length(64);
  request.set_no_cache(true);
  for (int32_t id : ids) request.add_inputs()->add_ids(id);
  request.clear_inputs();
  v1::RollingInput* input = request.add_inputs();
  for (int32_t id : ids) input->add_ids(id);
  request.add_inputs()->set_text("Once upon a time, there was a little girl named Lily.");
  request.set_return_token_logprobs(true);
  request.set_bos_mode(v1::BOS_MODE_NONE);
  auto response = client_->LoglikelihoodRolling(request);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->results_size(), 2);
  // Engine: the same windows scored directly.
  std::vector<server::TokenPair> windows =
      lm_eval::MakeRollingWindows(ids, tokenizer_->bos_id(), 64);
  ASSERT_EQ(windows.size(), 4u);
  std::vector<ScoreRequest> engine_requests;
  for (const auto& w : windows) engine_requests.push_back({nullptr, w.context, w.continuation});
  auto expected = Score(*model_, engine_requests);
  ASSERT_TRUE(expected.ok());
  double total = 0;
  for (const ScoreResult& r : *expected) total += r.logprob;
  EXPECT_EQ(response->results(0).logprob(), total);
  EXPECT_EQ(response->results(0).tokens(), 200);
  EXPECT_EQ(response->results(0).windows(), 4);
  EXPECT_EQ(response->results(0).token_logprobs_size(), 200);
  // A short text is one window conditioned on BOS.
  std::vector<int32_t> text_ids =
      *tokenizer_->Encode("Once upon a time, there was a little girl named Lily.", false);
  auto one = Score(*model_, {ScoreRequest{nullptr, {tokenizer_->bos_id()}, text_ids}});
  EXPECT_EQ(response->results(1).logprob(), (*one)[0].logprob);
  EXPECT_EQ(response->results(1).windows(), 1);

  // BOS_MODE_TOKENIZER encodes as lm-eval >= 0.4.9.2's tok_encode: BOS first, scored after
  // the prefix token.
  v1::LoglikelihoodRollingRequest with_bos;
  with_bos.set_model("hgrn2");
  with_bos.set_no_cache(true);
  with_bos.set_bos_mode(v1::BOS_MODE_TOKENIZER);
  with_bos.add_inputs()->set_text("Once upon a time, there was a little girl named Lily.");
  auto bos_response = client_->LoglikelihoodRolling(with_bos);
  ASSERT_TRUE(bos_response.ok()) << bos_response.status();
  std::vector<int32_t> bos_ids =
      *tokenizer_->Encode("Once upon a time, there was a little girl named Lily.", true);
  ASSERT_EQ(bos_ids.size(), text_ids.size() + 1);
  auto scored = Score(*model_, {ScoreRequest{nullptr, {tokenizer_->bos_id()}, bos_ids}});
  EXPECT_EQ(bos_response->results(0).logprob(), (*scored)[0].logprob);
  EXPECT_EQ(bos_response->results(0).tokens(), static_cast<int32_t>(bos_ids.size()));
}

TEST_F(ServiceTest, GenerateEqualsTheEngineAndStreams) {
  v1::GenerateRequest request;
  request.set_model("hgrn2");
  request.set_prompt("Once upon a time");
  request.set_max_tokens(24);
  request.set_ignore_eos(true);
  request.set_no_cache(true);
  request.set_bos_mode(v1::BOS_MODE_NONE);
  int chunks = 0;
  auto got = client_->Generate(request, [&](const v1::GenerateResponse&) { ++chunks; });
  ASSERT_TRUE(got.ok()) << got.status();
  GenerateRequest engine_request;
  engine_request.prompt = *tokenizer_->Encode("Once upon a time", false);
  engine_request.max_new_tokens = 24;
  auto expected = Generate(*model_, tokenizer_, {engine_request});
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(std::vector<int32_t>(got->token_ids().begin(), got->token_ids().end()),
            (*expected)[0].tokens);
  EXPECT_EQ(got->text(), (*expected)[0].text);
  EXPECT_EQ(got->generated_tokens(), 24);
  EXPECT_EQ(got->finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_GE(chunks, 1);
}

TEST_F(ServiceTest, GenerateStopsAtAStopStringAndCutsTheText) {
  v1::GenerateRequest request;
  request.set_model("hgrn2");
  request.set_prompt("Once upon a time");
  request.set_max_tokens(40);
  request.set_ignore_eos(true);
  auto full = client_->Generate(request);
  ASSERT_TRUE(full.ok());
  ASSERT_GE(full->text().size(), 6u);
  // A stop string taken from the middle of the greedy text.
  const std::string stop = full->text().substr(full->text().size() / 2, 2);
  request.add_until(stop);
  auto cut = client_->Generate(request);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(cut->finish_reason(), v1::FINISH_REASON_STOP_STRING);
  EXPECT_EQ(cut->text(), full->text().substr(0, full->text().find(stop)));
}

TEST_F(ServiceTest, SampledGenerationIsReproducibleForASeed) {
  v1::GenerateRequest request;
  request.set_model("hgrn2");
  request.set_prompt("Once");
  request.set_max_tokens(16);
  request.set_temperature(1.0f);
  request.set_top_p(0.9f);
  request.set_seed(1234);
  request.set_ignore_eos(true);
  request.set_no_cache(true);
  request.set_bos_mode(v1::BOS_MODE_NONE);
  auto a = client_->Generate(request);
  auto b = client_->Generate(request);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->text(), b->text());
  GenerateRequest engine_request;
  engine_request.prompt = *tokenizer_->Encode("Once", false);
  engine_request.max_new_tokens = 16;
  engine_request.sampling = {1.0f, 0.9f, 1234};
  auto expected = Generate(*model_, tokenizer_, {engine_request});
  EXPECT_EQ(std::vector<int32_t>(a->token_ids().begin(), a->token_ids().end()),
            (*expected)[0].tokens);
}

TEST_F(ServiceTest, InvalidRequestsFailWithCodeAndMessage) {
  using absl::StatusCode;
  {
    // bos_mode outside the enum (issue 29, low list): refused on every call that has it,
    // as SubmitJob already did, instead of being read as "tokenizer".
    auto r = IdsRequest({{1, 2}}, {{3}});
    r.set_bos_mode(static_cast<v1::BosMode>(7));
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kInvalidArgument,
                 "bos_mode 7 is not a BosMode");
    v1::LoglikelihoodRollingRequest rolling;
    rolling.set_model("hgrn2");
    rolling.add_inputs()->set_text("Once upon a time");
    rolling.set_bos_mode(static_cast<v1::BosMode>(-1));
    ExpectStatus(client_->LoglikelihoodRolling(rolling).status(), StatusCode::kInvalidArgument,
                 "bos_mode -1 is not a BosMode");
    v1::GenerateRequest generate;
    generate.set_model("hgrn2");
    generate.set_prompt("Once upon a time");
    generate.set_max_tokens(1);
    generate.set_bos_mode(static_cast<v1::BosMode>(3));
    ExpectStatus(client_->Generate(generate).status(), StatusCode::kInvalidArgument,
                 "bos_mode 3 is not a BosMode");
  }
  {
    auto r = IdsRequest({{1, 2}}, {{}});
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kInvalidArgument,
                 "pairs[0] has an empty continuation");
  }
  {
    v1::LoglikelihoodRequest r;
    r.set_model("hgrn2");
    r.add_pairs()->set_context("abc");
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kInvalidArgument,
                 "pairs[0] has an empty continuation");
  }
  {
    auto r = IdsRequest({{1, 2}}, {{3}});
    r.mutable_pairs(0)->set_context("text too");
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kInvalidArgument,
                 "pairs[0] gives both text (context/continuation) and token ids");
  }
  {
    auto r = IdsRequest({{1, 2}, {1, 600}}, {{3}, {4}});
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kInvalidArgument,
                 "pairs[1].context_ids[1] = 600 is outside the vocabulary (size 512)");
  }
  {
    auto r = IdsRequest({{1}}, {{-1}});
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kInvalidArgument,
                 "pairs[0].continuation_ids[0] = -1 is outside the vocabulary");
  }
  {
    v1::LoglikelihoodRequest r;
    r.set_model("hgrn2");
    r.add_pairs()->set_context(std::string("caf\xC3", 4));
    r.mutable_pairs(0)->set_continuation("x");
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kInvalidArgument,
                 "pairs[0].context is not valid UTF-8 (invalid byte sequence at offset 3)");
  }
  {
    std::vector<int32_t> long_context(100, 5);
    auto r = IdsRequest({long_context}, {{6}});
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kResourceExhausted,
                 "model 'hgrn2' accepts at most 96 tokens per sequence");
    r.set_truncate(true);
    auto truncated = client_->Loglikelihood(r);
    ASSERT_TRUE(truncated.ok()) << truncated.status();
    EXPECT_EQ(truncated->results(0).context_tokens(), 96);
  }
  {
    std::vector<std::vector<int32_t>> ctx(65, {1}), cont(65, {2});
    ExpectStatus(client_->Loglikelihood(IdsRequest(ctx, cont)).status(),
                 StatusCode::kResourceExhausted,
                 "request has 65 pairs; this server accepts at most 64 per call");
  }
  {
    auto r = IdsRequest({{1}}, {{2}});
    r.set_model("no-such-model");
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kNotFound,
                 "unknown model 'no-such-model'");
    r.set_model("../hgrn2");
    ExpectStatus(client_->Loglikelihood(r).status(), StatusCode::kNotFound, "unknown model");
  }
  {
    v1::GenerateRequest g;
    g.set_model("hgrn2");
    g.set_prompt(std::string("\xFF", 1));
    g.set_max_tokens(4);
    ExpectStatus(client_->Generate(g).status(), StatusCode::kInvalidArgument,
                 "prompt is not valid UTF-8");
    g.set_prompt("Once");
    g.add_prompt_ids(1);
    ExpectStatus(client_->Generate(g).status(), StatusCode::kInvalidArgument,
                 "give either prompt (text) or prompt_ids, not both");
    g.clear_prompt_ids();
    g.set_max_tokens(200);
    ExpectStatus(client_->Generate(g).status(), StatusCode::kResourceExhausted,
                 "exceeds model 'hgrn2' limit of 96 tokens per sequence");
    // lm-eval's generate_until preparation: text prompts only, and room for the context.
    g.set_lm_eval(true);
    g.set_max_length(64);
    ExpectStatus(client_->Generate(g).status(), StatusCode::kInvalidArgument,
                 "max_gen_toks (200) must be less than max_length (64)");
    g.set_max_length(-1);
    ExpectStatus(client_->Generate(g).status(), StatusCode::kInvalidArgument,
                 "max_length must be >= 0");
    g.set_max_length(0);
    g.set_max_tokens(4);
    g.clear_prompt();
    g.add_prompt_ids(1);
    ExpectStatus(client_->Generate(g).status(), StatusCode::kInvalidArgument,
                 "prompt_ids cannot be given with it");
  }
  {
    v1::TokenizeRequest t;
    t.set_model("hgrn2");
    t.set_text(std::string("ok\x80", 3));
    ExpectStatus(client_->Tokenize(t).status(), StatusCode::kInvalidArgument,
                 "text is not valid UTF-8 (invalid byte sequence at offset 2)");
  }
  {
    ExpectStatus(client_->GetJob("job-doesnotexist").status(), StatusCode::kNotFound,
                 "unknown job 'job-doesnotexist'");
    v1::SubmitJobRequest s;
    s.set_model("hgrn2");
    s.add_tasks("no_such_task");
    ExpectStatus(client_->SubmitJob(s).status(), StatusCode::kNotFound,
                 "unknown task 'no_such_task'");
    s.set_model("nope");
    s.set_tasks(0, "piqa");
    ExpectStatus(client_->SubmitJob(s).status(), StatusCode::kNotFound, "unknown model 'nope'");
    // Few-shot is not implemented: never run zero-shot under a few-shot label.
    s.set_model("hgrn2");
    for (int shots : {5, -1, 1000000}) {
      s.mutable_options()->set_num_fewshot(shots);
      ExpectStatus(client_->SubmitJob(s).status(), StatusCode::kInvalidArgument,
                   "is not supported: hgeval evaluates zero-shot only");
    }
    s.mutable_options()->set_num_fewshot(0);
    s.mutable_options()->set_bos_mode(static_cast<v1::BosMode>(7));
    ExpectStatus(client_->SubmitJob(s).status(), StatusCode::kInvalidArgument, "is not a BosMode");
    s.mutable_options()->set_bos_mode(v1::BOS_MODE_NONE);
    s.mutable_options()->set_shard_requests(-1);
    ExpectStatus(client_->SubmitJob(s).status(), StatusCode::kInvalidArgument,
                 "options.shard_requests must be >= 0");
    s.mutable_options()->set_shard_requests(0);
    s.add_tasks("piqa");
    ExpectStatus(client_->SubmitJob(s).status(), StatusCode::kInvalidArgument,
                 "task 'piqa' is listed twice");
    ExpectStatus(client_->ListJobs(-5).status(), StatusCode::kInvalidArgument,
                 "limit must be in [0, 10000]");
    // Names with invalid UTF-8 (found by the service fuzzer: a proto3 string field failed
    // to parse and the client saw INTERNAL with no message).
    ExpectStatus(client_
                     ->GetJob(std::string("jo\x87"
                                          "b",
                                          4))
                     .status(),
                 StatusCode::kInvalidArgument, "job_id is not valid UTF-8");
    ExpectStatus(client_->CancelJob(std::string("\xff", 1)).status(), StatusCode::kInvalidArgument,
                 "job_id is not valid UTF-8");
    v1::SubmitJobRequest bad = s;
    bad.set_tasks(1, std::string("pi\xc3", 3));
    ExpectStatus(client_->SubmitJob(bad).status(), StatusCode::kInvalidArgument,
                 "tasks[1] is not valid UTF-8");
    auto bad_model = IdsRequest({{1}}, {{2}});
    bad_model.set_model(std::string("hgrn\xe2\x82", 6));
    ExpectStatus(client_->Loglikelihood(bad_model).status(), StatusCode::kInvalidArgument,
                 "model is not valid UTF-8");
  }
  {
    // An infinite temperature used to sample uniformly.
    v1::GenerateRequest g;
    g.set_model("hgrn2");
    g.set_prompt("Once");
    g.set_max_tokens(2);
    for (float t :
         {std::numeric_limits<float>::infinity(), -1.0f, std::numeric_limits<float>::quiet_NaN()}) {
      g.set_temperature(t);
      ExpectStatus(client_->Generate(g).status(), StatusCode::kInvalidArgument,
                   "temperature must be a finite number >= 0");
    }
  }
  // The server survived all of it.
  EXPECT_TRUE(client_->ListModels().ok());
}

TEST_F(ServiceTest, CancellingOneGenerationLeavesTheOthersIntact) {
  v1::GenerateRequest request;
  request.set_model("hgrn2");
  request.set_prompt("Once upon a time");
  request.set_max_tokens(80);
  request.set_ignore_eos(true);
  request.set_no_cache(true);
  auto solo = client_->Generate(request);
  ASSERT_TRUE(solo.ok());
  // Three concurrent generations; the middle one is cancelled after its first tokens.
  grpc::ClientContext cancel_context;
  absl::StatusOr<v1::GenerateResponse> results[3];
  std::thread threads[3];
  std::atomic<bool> got_tokens{false};
  for (int i = 0; i < 3; ++i) {
    threads[i] = std::thread([&, i] {
      if (i == 1) {
        results[i] = client_->Generate(
            request, [&](const v1::GenerateResponse&) { got_tokens = true; }, &cancel_context);
      } else {
        results[i] = client_->Generate(request);
      }
    });
  }
  while (!got_tokens) absl::SleepFor(absl::Milliseconds(1));
  cancel_context.TryCancel();
  for (auto& t : threads) t.join();
  ExpectStatus(results[1].status(), absl::StatusCode::kCancelled, "");
  for (int i : {0, 2}) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    EXPECT_EQ(results[i]->text(), solo->text());
    EXPECT_EQ(results[i]->generated_tokens(), 80);
  }
}

TEST_F(ServiceTest, ReflectionListsTheServicesAndServesTheirDescriptors) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(client_->channel());
  grpc::ClientContext context;
  auto stream = stub->ServerReflectionInfo(&context);
  grpc::reflection::v1alpha::ServerReflectionRequest request;
  request.set_list_services("");
  ASSERT_TRUE(stream->Write(request));
  grpc::reflection::v1alpha::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::set<std::string> services;
  for (const auto& s : response.list_services_response().service()) services.insert(s.name());
  EXPECT_TRUE(services.count("hgeval.v1.ModelService"));
  EXPECT_TRUE(services.count("hgeval.v1.JobService"));
  EXPECT_TRUE(services.count("grpc.health.v1.Health"));
  EXPECT_TRUE(services.count("grpc.reflection.v1alpha.ServerReflection"));
  // What grpcurl does next: fetch the file declaring a service and decode it.
  request.set_file_containing_symbol("hgeval.v1.ModelService");
  ASSERT_TRUE(stream->Write(request));
  ASSERT_TRUE(stream->Read(&response));
  google::protobuf::DescriptorPool pool;
  std::vector<google::protobuf::FileDescriptorProto> files;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(bytes));
    files.push_back(file);
  }
  for (const auto& f : files) pool.BuildFile(f);
  const google::protobuf::ServiceDescriptor* service =
      pool.FindServiceByName("hgeval.v1.ModelService");
  ASSERT_NE(service, nullptr);
  const google::protobuf::MethodDescriptor* generate = service->FindMethodByName("Generate");
  ASSERT_NE(generate, nullptr);
  EXPECT_TRUE(generate->server_streaming());
  EXPECT_EQ(service->FindMethodByName("Loglikelihood")->input_type()->full_name(),
            "hgeval.v1.LoglikelihoodRequest");
  stream->WritesDone();
}

TEST_F(ServiceTest, CliScoresAndGeneratesLikeTheLibrary) {
  std::string out;
  ASSERT_EQ(testing::RunCommand(
                {testing::ClientBinary(), "score", "--server=" + server_->address(),
                 "--model=hgrn2", "--context=Once upon a ", "--continuation=time there was"},
                &out),
            0);
  v1::LoglikelihoodRequest request;
  request.set_model("hgrn2");
  request.add_pairs()->set_context("Once upon a ");
  request.mutable_pairs(0)->set_continuation("time there was");
  auto expected = client_->Loglikelihood(request);
  ASSERT_TRUE(expected.ok());
  // Compared as numbers (a 6-digit string match failed once the value's rounding changed).
  EXPECT_EQ(nlohmann::json::parse(out)["logprob"].get<double>(), expected->results(0).logprob())
      << out;
  out.clear();
  // Several continuations of one context (a comma list, as every list flag): one pair each,
  // printed in order; "\x2c" is a comma inside one.
  ASSERT_EQ(testing::RunCommand({testing::ClientBinary(), "score", "--server=" + server_->address(),
                                 "--model=hgrn2", "--context=Once upon a ",
                                 "--continuation=time there was,day\\x2c a"},
                                &out),
            0);
  request.add_pairs()->set_context("Once upon a ");
  request.mutable_pairs(1)->set_continuation("day, a");
  auto both = client_->Loglikelihood(request);
  ASSERT_TRUE(both.ok());
  const std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << out;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(nlohmann::json::parse(lines[i])["logprob"].get<double>(), both->results(i).logprob())
        << lines[i];
  }
  out.clear();
  EXPECT_EQ(testing::RunCommand({testing::ClientBinary(), "score", "--server=" + server_->address(),
                                 "--model=hgrn2", "--context=a"},
                                &out),
            1);  // no continuation: refused, not an empty call
  out.clear();
  ASSERT_EQ(testing::RunCommand(
                {testing::ClientBinary(), "models", "--server=" + server_->address()}, &out),
            0);
  EXPECT_THAT(out, HasSubstr("hgrn2\thgrn2\tvocab=512"));
  out.clear();
  EXPECT_EQ(testing::RunCommand({testing::ClientBinary(), "score", "--server=" + server_->address(),
                                 "--model=missing", "--context=a", "--continuation=b"},
                                &out),
            1);
}

// Authentication fails closed: an empty, whitespace-only or unreadable token source stops
// the server at start (exit 2, saying why) instead of serving everyone; so does a token
// holding bytes no client can send.
TEST(ServiceAuthTest, EmptyOrUnreadableTokenSourceRefusesToStart) {
  const std::string dir = testing::MakeTempDir("auth-closed");
  std::ofstream(dir + "/empty").close();
  std::ofstream(dir + "/blank") << "  \n\t\n";
  // Bytes no client can send in a header (issue 29, low list: such a token was accepted
  // and locked every client out).
  std::ofstream(dir + "/control") << "s3cret\x01token\n";
  std::ofstream(dir + "/inner_space") << "s3cret token\n";
  std::ofstream(dir + "/non_ascii") << "s3cr\xC3\xA9t\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir + "/empty", "holds no token"},
      {dir + "/blank", "holds no token"},
      {dir + "/control", "byte 0x01 at offset 6"},
      {dir + "/inner_space", "byte 0x20 at offset 6"},
      {dir + "/non_ascii", "byte 0xc3 at offset 4"},
      {dir, "not a readable regular file"},
      {dir + "/missing", "not a readable regular file"}};
  for (const auto& [file, why] : cases) {
    ServerProcess server;
    std::vector<std::string> args = GoldenArgs(dir);
    args.push_back("--auth_token_file=" + file);
    const absl::Status started = server.Start(dir, args);
    ASSERT_FALSE(started.ok()) << file << " started a server";
    EXPECT_NE(std::string(started.message()).find(why), std::string::npos)
        << file << ": " << started;
  }
}

// Separate servers: authentication, health during start and shutdown.
TEST(ServiceAuthTest, MissingOrWrongTokenIsUnauthenticated) {
  const std::string dir = testing::MakeTempDir("auth-e2e");
  { std::ofstream(dir + "/token") << "s3cret-token\n"; }
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--auth_token_file=" + dir + "/token");
  ASSERT_TRUE(server.Start(dir, args).ok());
  client::ClientOptions options;
  options.servers = {server.address()};
  auto anonymous = client::Client::Connect(options);
  ASSERT_TRUE((*anonymous)->WaitServing(absl::Seconds(30)).ok());  // health needs no token
  ExpectStatus((*anonymous)->ListModels().status(), absl::StatusCode::kUnauthenticated,
               "missing bearer token");
  options.token = "wrong";
  ExpectStatus((*client::Client::Connect(options))->ListModels().status(),
               absl::StatusCode::kUnauthenticated, "invalid bearer token");
  options.token = "s3cret-token-longer";
  ExpectStatus((*client::Client::Connect(options))->ListModels().status(),
               absl::StatusCode::kUnauthenticated, "invalid bearer token");
  options.token = "s3cret-token";
  auto good = client::Client::Connect(options);
  EXPECT_TRUE((*good)->ListModels().ok());
  ExpectStatus((*anonymous)->GetJob("x").status(), absl::StatusCode::kUnauthenticated,
               "missing bearer token");
}

TEST(ServiceTlsTest, ServesOverTlsWithTheGivenCertificate) {
  const std::string dir = testing::MakeTempDir("tls-e2e");
  std::string ignored;
  const int rc = testing::RunCommand(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
       dir + "/key.pem", "-out", dir + "/cert.pem", "-days", "1", "-subj", "/CN=localhost",
       "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"},
      &ignored);
  if (rc != 0) GTEST_SKIP() << "no openssl command to make a test certificate";
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--tls_cert=" + dir + "/cert.pem");
  args.push_back("--tls_key=" + dir + "/key.pem");
  ASSERT_TRUE(server.Start(dir, args).ok());
  client::ClientOptions options;
  options.servers = {server.address()};
  options.tls = true;
  std::ifstream cert(dir + "/cert.pem");
  options.tls_ca_pem.assign(std::istreambuf_iterator<char>(cert), {});
  auto tls = *client::Client::Connect(options);
  ASSERT_TRUE(tls->WaitServing(absl::Seconds(30)).ok());
  auto models = tls->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  EXPECT_EQ(models->models(0).name(), "hgrn2");
  options.tls = false;
  options.timeout = absl::Seconds(2);
  EXPECT_FALSE((*client::Client::Connect(options))->ListModels().ok());  // plaintext refused
}

TEST(ServiceHealthTest, NotServingDuringStartAndShutdown) {
  const std::string dir = testing::MakeTempDir("health-e2e");
  ServerProcess server;
  std::vector<std::string> args = GoldenArgs(dir);
  args.push_back("--startup_delay_ms=1500");
  args.push_back("--shutdown_grace_ms=1500");
  ASSERT_TRUE(server.Start(dir, args).ok());
  client::ClientOptions options;
  options.servers = {server.address()};
  auto client = *client::Client::Connect(options);
  // Starting: NOT_SERVING, and model calls are refused.
  absl::StatusOr<std::string> h;
  for (int i = 0; i < 100; ++i) {
    h = client->Health();
    if (h.ok()) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, "NOT_SERVING");
  EXPECT_EQ(*client->Health("hgeval.v1.ModelService"), "NOT_SERVING");
  ExpectStatus(client->ListModels().status(), absl::StatusCode::kUnavailable, "not serving");
  ASSERT_TRUE(client->WaitServing(absl::Seconds(30)).ok());
  EXPECT_EQ(*client->Health("hgeval.v1.ModelService"), "SERVING");
  EXPECT_TRUE(client->ListModels().ok());
  // Shutting down: NOT_SERVING during the grace period, then gone.
  kill(server.pid(), SIGTERM);
  bool saw_not_serving = false;
  for (int i = 0; i < 100 && !saw_not_serving; ++i) {
    h = client->Health();
    saw_not_serving = h.ok() && *h == "NOT_SERVING";
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(saw_not_serving);
  EXPECT_EQ(server.Stop(0 /* already signalled: just reap */), 0);
}

}  // namespace
}  // namespace hgeval
