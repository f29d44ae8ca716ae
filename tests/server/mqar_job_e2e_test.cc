// mqar through the service: a server job (`hgeval run --tasks mqar`) and a client-side
// run (`hgeval run --local`) on a LLaMA with the MQAR vocabulary (8192,
// tests/tasks/mqar_test_model.h) give the same predictions and the same per-setting table
// as the in-process evaluator. The server runs it without a tokenizer (--tokenizer=none),
// as MQAR-trained checkpoints have none.
#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include "client/client.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"
#include "tasks/models/engine_language_model.h"
#include "tests/server/server_fixture.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"
#include "tests/tasks/mqar_test_model.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

constexpr char kTokenizer[] = "data/models/stories260K/tok512.bin";
constexpr int kLimit = 8;  // two examples of each of the four settings

class MqarJobTest : public testing::ServerFixture {
 protected:
  void SetUp() override {
    MakeDir("mqar-job");
    model_dir_ = dir_ + "/mqar_llama";
    ASSERT_EQ(system(("mkdir -p " + model_dir_).c_str()), 0);
    ASSERT_TRUE(testing::WriteMqarVocabLlama(model_dir_).ok());
    StartServer({"--model=mqar_llama=" + model_dir_, "--tokenizer=none",
                 "--data_dir=" + SourcePath("data"), "--store=" + dir_ + "/s.sqlite",
                 "--shutdown_grace_ms=0"});
  }

  Json InProcess() {
    auto model = LoadModel(model_dir_, LoadOptions());
    auto tokenizer = LoadTokenizer(SourcePath(kTokenizer));
    EXPECT_TRUE(model.ok() && tokenizer.ok());
    if (!model.ok() || !tokenizer.ok()) return {};
    tasks::EngineLanguageModel lm(model->get(), tokenizer->get(), {});
    tasks::EvaluatorOptions options;
    options.limit = kLimit;
    options.log_samples = true;
    auto report = tasks::RunTasks(lm, {"mqar"}, options);
    EXPECT_TRUE(report.ok()) << report.status();
    if (!report.ok()) return {};
    Json out = tasks::ResultsJson(*report);
    out["samples"]["mqar"] = report->tasks[0].samples;
    return out;
  }

  std::string model_dir_;
};

TEST_F(MqarJobTest, JobMatchesInProcessRunAndCarriesThePerSettingTable) {
  v1::SubmitJobRequest request;
  request.set_model("mqar_llama");
  request.add_tasks("mqar");
  request.set_limit(kLimit);
  request.mutable_options()->set_log_samples(true);
  auto id = client_->SubmitJob(request);
  ASSERT_TRUE(id.ok()) << id.status();
  auto job = client_->WatchJob(*id, nullptr);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->error();
  const Json server = Json::parse(job->results_json());
  const Json local = InProcess();
  ASSERT_FALSE(local.is_null());

  const Json& results = server.at("results").at("mqar");
  for (const char* key : {"acc,none", "acc_L64_K4,none", "acc_L128_K8,none", "acc_L256_K16,none",
                          "acc_L512_K64,none"}) {
    EXPECT_TRUE(results.contains(key)) << key;
  }
  EXPECT_EQ(results, local.at("results").at("mqar"));
  const Json& server_samples = server.at("samples").at("mqar");
  const Json& local_samples = local.at("samples").at("mqar");
  ASSERT_EQ(server_samples.size(), static_cast<size_t>(kLimit));
  ASSERT_EQ(local_samples.size(), static_cast<size_t>(kLimit));
  for (size_t i = 0; i < local_samples.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(server_samples[i].at("doc"), local_samples[i].at("doc"));
    EXPECT_EQ(server_samples[i].at("arguments"), local_samples[i].at("arguments"));
    // resps[0] = [logprob, argmax at each labelled position]; a job asks the scheduler for
    // the argmax only, so only the predictions are compared.
    EXPECT_EQ(server_samples[i].at("resps")[0][1], local_samples[i].at("resps")[0][1]);
    EXPECT_EQ(server_samples[i].at("acc"), local_samples[i].at("acc"));
  }
}

TEST_F(MqarJobTest, HgevalRunWritesThePerSettingTable) {
  const std::string output = dir_ + "/results.json";
  std::string stdout_text;
  const int status = RunHgevalRun({"--model=mqar_llama", "--tasks=mqar",
                                   "--limit=" + std::to_string(kLimit), "--output=" + output},
                                  &stdout_text);
  ASSERT_EQ(status, 0) << stdout_text;
  EXPECT_NE(stdout_text.find("acc_L512_K64"), std::string::npos) << stdout_text;
  std::ifstream in(output);
  const Json results = Json::parse(in);
  EXPECT_EQ(results.at("n-samples").at("mqar").at("effective"), kLimit);
  EXPECT_EQ(results.at("configs").at("mqar").at("vocab_size"), testing::kMqarVocab);
  EXPECT_TRUE(results.at("results").at("mqar").contains("acc_L256_K16,none"));
}

TEST_F(MqarJobTest, HgevalRunLocalMatchesInProcessRun) {
  // --local runs the task in the client and sends token-id Loglikelihood calls.
  const std::string output = dir_ + "/local_results.json";
  std::string stdout_text;
  const int status =
      RunHgevalRun({"--local", "--model=mqar_llama", "--tasks=mqar",
                    "--limit=" + std::to_string(kLimit), "--log_samples", "--output=" + output},
                   &stdout_text);
  ASSERT_EQ(status, 0) << stdout_text;
  std::ifstream in(output);
  const Json remote = Json::parse(in);
  const Json local = InProcess();
  ASSERT_FALSE(local.is_null());
  EXPECT_EQ(remote.at("results").at("mqar"), local.at("results").at("mqar"));
}

TEST_F(MqarJobTest, TextRequestsToATokenizerlessModelFailSayingWhy) {
  v1::LoglikelihoodRequest request;
  request.set_model("mqar_llama");
  v1::LoglikelihoodPair* pair = request.add_pairs();
  pair->set_context("Once upon");
  pair->set_continuation(" a time");
  auto response = client_->Loglikelihood(request);
  ASSERT_FALSE(response.ok());
  EXPECT_NE(response.status().message().find("no tokenizer"), std::string::npos)
      << response.status();
}

}  // namespace
}  // namespace hgeval
