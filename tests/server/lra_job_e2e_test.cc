// LRA through the service, on a small random-weight HGRN2 ListOps classifier
// (tests/tasks/lra_test_checkpoint.h) and the bundled LRA-length ListOps test split:
// `hgeval run --tasks lra_listops` as a server job (and `hgeval run --local`, Classify
// calls from the client, and `hgeval-eval`) gives the in-process evaluator's accuracy; the Classify
// RPC gives the in-process logits, batches concurrent calls in the scheduler and answers a repeat
// from the result store; language-model calls on the classifier and LM tasks in a job on it are
// refused saying why.
#include <signal.h>

#include <fstream>
#include <future>
#include <string>
#include <vector>

#include "client/client.h"
#include "engine/model/lra_classifier.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"
#include "tasks/lra/engine_lra_classifier.h"
#include "tasks/lra/listops_data.h"
#include "tests/server/server_fixture.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"
#include "tests/tasks/lra_test_checkpoint.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

constexpr int kLimit = 12;

class LraJobTest : public testing::ServerFixture {
 protected:
  void SetUp() override {
    MakeDir("lra-job");
    model_dir_ = dir_ + "/lra_listops";
    ASSERT_EQ(system(("mkdir -p " + model_dir_).c_str()), 0);
    testing::LraTestSpec spec;
    spec.d = 16;
    testing::WriteRandomLraCheckpoint(model_dir_, spec, 5);
    StartServer({"--model=lra=" + model_dir_, "--data_dir=" + SourcePath("data"),
                 "--store=" + dir_ + "/s.sqlite", "--shutdown_grace_ms=0"});
  }

  std::string model_dir_;
};

TEST_F(LraJobTest, HgevalRunGivesTheInProcessAccuracy) {
  const std::string output = dir_ + "/results.json";
  std::string stdout_text;
  const int status = RunHgevalRun({"--model=lra", "--tasks=lra_listops",
                                   "--limit=" + std::to_string(kLimit), "--output=" + output},
                                  &stdout_text);
  ASSERT_EQ(status, 0) << stdout_text;
  EXPECT_NE(stdout_text.find("lra_listops"), std::string::npos) << stdout_text;
  std::ifstream in(output);
  const Json server = Json::parse(in);
  EXPECT_EQ(server.at("n-samples").at("lra_listops").at("effective"), kLimit);

  auto lm = tasks::lra::EngineLraClassifier::Load(model_dir_);
  ASSERT_TRUE(lm.ok()) << lm.status();
  tasks::EvaluatorOptions options;
  options.limit = kLimit;
  options.data_dir = SourcePath("data");
  auto report = tasks::RunTasks(**lm, {"lra_listops"}, options);
  ASSERT_TRUE(report.ok()) << report.status();
  const Json local = tasks::ResultsJson(*report);
  EXPECT_EQ(server.at("results").at("lra_listops").at("acc,none"),
            local.at("results").at("lra_listops").at("acc,none"));
  EXPECT_EQ(server.at("config").at("model_hash"), local.at("config").at("model_hash"));

  // --local: the task runs in the client and sends Classify calls.
  const std::string local_output = dir_ + "/local_results.json";
  ASSERT_EQ(RunHgevalRun({"--local", "--model=lra", "--data_dir=" + SourcePath("data"),
                          "--tasks=lra_listops", "--limit=" + std::to_string(kLimit),
                          "--output=" + local_output},
                         &stdout_text),
            0)
      << stdout_text;
  std::ifstream local_in(local_output);
  const Json remote = Json::parse(local_in);
  EXPECT_EQ(remote.at("results").at("lra_listops").at("acc,none"),
            local.at("results").at("lra_listops").at("acc,none"));

  // hgeval-eval on the checkpoint folder, in process.
  const std::string eval_output = dir_ + "/eval_results.json";
  ASSERT_EQ(testing::RunCommand(
                {std::string(HGEVAL_BINARY_DIR) + "/tasks/tools/hgeval-eval", "--model", model_dir_,
                 "--tasks", "lra_listops", "--limit", std::to_string(kLimit), "--data_dir",
                 SourcePath("data"), "--noprogress", "--output", eval_output},
                &stdout_text),
            0)
      << stdout_text;
  std::ifstream eval_in(eval_output);
  const Json eval = Json::parse(eval_in);
  EXPECT_EQ(eval.at("results").at("lra_listops").at("acc,none"),
            local.at("results").at("lra_listops").at("acc,none"));
  EXPECT_EQ(eval.at("config").at("model_hash"), server.at("config").at("model_hash"));
}

TEST_F(LraJobTest, ClassifyRpcMatchesTheEngineAndIsStored) {
  auto examples = tasks::lra::ReadListOpsTsv(SourcePath("data/lra/listops/basic_test.tsv.gz"));
  ASSERT_TRUE(examples.ok()) << examples.status();
  v1::ClassifyRequest request;
  request.set_model("lra");
  std::vector<tasks::ClassifyRequest> local_requests;
  for (int i = 0; i < 4; ++i) {
    request.add_examples()->add_documents()->set_text((*examples)[i].source);
    local_requests.push_back({{{(*examples)[i].source, {}, 0}}});
  }
  // Concurrent calls share the scheduler; each gets its own results.
  auto first = std::async(std::launch::async, [&] { return client_->Classify(request); });
  auto second = client_->Classify(request);
  auto response = first.get();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_TRUE(second.ok()) << second.status();
  auto lm = tasks::lra::EngineLraClassifier::Load(model_dir_);
  ASSERT_TRUE(lm.ok());
  auto local = (*lm)->Classify(local_requests, {});
  ASSERT_TRUE(local.ok()) << local.status();
  for (int i = 0; i < 4; ++i) {
    const v1::ClassifyResult& r = response->results(i);
    ASSERT_EQ(r.logits_size(), 10);
    for (int k = 0; k < 10; ++k) EXPECT_EQ(r.logits(k), (*local)[i].logits[k]) << i << " " << k;
    EXPECT_EQ(r.predicted(), (*local)[i].predicted);
  }
  auto again = client_->Classify(request);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->results(0).cached());
  EXPECT_EQ(again->results(3).logits(2), response->results(3).logits(2));

  // An image to a text model, and an unknown model.
  v1::ClassifyRequest image = request;
  image.mutable_examples(0)->mutable_documents(0)->clear_text();
  image.mutable_examples(0)->mutable_documents(0)->set_pixels(std::string(16, '\x10'));
  image.mutable_examples(0)->mutable_documents(0)->set_channels(1);
  auto wrong = client_->Classify(image);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("examples[0]"), std::string::npos) << wrong.status();
}

TEST_F(LraJobTest, LanguageModelCallsAndTasksAreRefused) {
  v1::LoglikelihoodRequest request;
  request.set_model("lra");
  v1::LoglikelihoodPair* pair = request.add_pairs();
  pair->set_context("( [MAX 1");
  pair->set_continuation(" ] )");
  auto response = client_->Loglikelihood(request);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(response.status().message().find("LRA classifier"), std::string::npos)
      << response.status();
  v1::SubmitJobRequest job;
  job.set_model("lra");
  job.add_tasks("piqa");
  auto id = client_->SubmitJob(job);
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find("needs a language model"), std::string::npos) << id.status();
  auto models = client_->ListModels();
  ASSERT_TRUE(models.ok());
  ASSERT_EQ(models->models_size(), 1);
  EXPECT_EQ(models->models(0).family(), "lra_hgrn2");
  // The server is still up.
  EXPECT_TRUE(client_->WaitServing(absl::Seconds(5)).ok());
}

}  // namespace
}  // namespace hgeval
