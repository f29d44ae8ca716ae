// The server prepares lm-eval requests itself (server/core/request_prep, StoreLanguageModel);
// the in-process evaluator uses the tasks library's EngineLanguageModel. Both follow
// lm-eval's tokenization rules, so a server job must reproduce the in-process run sample
// for sample: the same log-likelihoods (bit for bit: the CPU engine's results do not depend
// on batching or context reuse), the same metrics, for every kind of task request.
#include <signal.h>

#include <string>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/models/engine_language_model.h"
#include "tests/server/lm_eval_routes.h"
#include "tests/server/server_fixture.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

constexpr char kModel[] = "tests/golden/hgrn2";
constexpr char kTokenizer[] = "data/models/stories260K/tok512.bin";

// lm-eval <= 0.4.9.1's regime unless told: these runs pin the request shapes; the
// cross-route test runs every route's default.
Json InProcess(const std::vector<std::string>& task_names, int limit,
               tasks::BosRegime bos = tasks::BosRegime::kNone) {
  return testing::RunInProcess(SourcePath(kModel), SourcePath(kTokenizer), task_names, limit, bos);
}

Json OnServer(client::Client& client, const std::vector<std::string>& task_names, int limit,
              v1::BosMode bos = v1::BOS_MODE_NONE) {
  return testing::RunAsJob(client, "hgrn2", task_names, limit, bos);
}

class JobMatchesEvaluatorTest : public testing::ServerFixture {
 protected:
  void SetUp() override {
    MakeDir("job-vs-evaluator");
    StartServer({"--model=hgrn2=" + SourcePath(kModel), "--tokenizer=" + SourcePath(kTokenizer),
                 "--data_dir=" + SourcePath("data"), "--store=" + dir_ + "/s.sqlite",
                 "--shutdown_grace_ms=0"});
  }
};

TEST_F(JobMatchesEvaluatorTest, MultipleChoiceAndCompletionTasks) {
  // Every request shape: shared contexts with short choices (arc, obqa, siqa, piqa), long
  // endings (hellaswag), partial evaluation with the choice in the context (winogrande),
  // yes/no (boolq), last-word completion with a perplexity (lambada).
  const std::vector<std::string> names = {"arc_easy",   "arc_challenge", "openbookqa",
                                          "social_iqa", "piqa",          "hellaswag",
                                          "winogrande", "boolq",         "lambada_openai"};
  const Json local = InProcess(names, 6);
  const Json server = OnServer(*client_, names, 6);
  testing::ExpectSameTaskResults(server, local, names);
  // One model hash for a Hugging Face folder: the checkpoint's content hash on both routes.
  EXPECT_FALSE(local.at("config").at("model_hash").get<std::string>().empty());
  EXPECT_EQ(server.at("config").at("model_hash"), local.at("config").at("model_hash"));
}

TEST_F(JobMatchesEvaluatorTest, LoglikelihoodJobsFeedTheEvaluatorsTokens) {
  // A job scores loglikelihood requests through the evaluator's context reuse: each
  // shared context is fed once and its choices fork from its state, so the job feeds
  // exactly the tokens hgeval-eval feeds (scoring every pair from scratch, as jobs did
  // before, feeds each context once per choice).
  const std::vector<std::string> names = {"arc_easy", "hellaswag", "piqa"};
  const Json local = InProcess(names, 8);
  const Json server = OnServer(*client_, names, 8);
  testing::ExpectSameTaskResults(server, local, names);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Json& local_work = local.at("hgeval").at("tasks").at(name);
    const Json& server_work = server.at("hgeval").at("tasks").at(name);
    EXPECT_EQ(server_work.at("tokens_fed"), local_work.at("tokens_fed"));
    EXPECT_EQ(server_work.at("tokens_scored"), local_work.at("tokens_scored"));
  }
}

TEST_F(JobMatchesEvaluatorTest, RollingPerplexity) {
  // Rolling windows over whole documents (wikitext: word/byte perplexity, bits per byte).
  const std::vector<std::string> names = {"wikitext"};
  const Json local = InProcess(names, 1);
  const Json server = OnServer(*client_, names, 1);
  testing::ExpectSameTaskResults(server, local, names);
}

TEST_F(JobMatchesEvaluatorTest, ScrollsGenerationAndMultipleChoice) {
  // SCROLLS through the job path: qmsum's greedy generations (long meetings, the prompt
  // cut to leave the generation budget) with corpus ROUGE, contract_nli's choices.
  const std::vector<std::string> names = {"scrolls_contractnli", "scrolls_qmsum"};
  const Json local = InProcess(names, 4);
  const Json server = OnServer(*client_, names, 4);
  testing::ExpectSameTaskResults(server, local, names);
}

TEST_F(JobMatchesEvaluatorTest, TokenizerBosRegime) {
  // BOS_MODE_TOKENIZER (lm-eval >= 0.4.9.2): BOS before every context.
  const std::vector<std::string> names = {"arc_easy", "winogrande", "lambada_openai", "wikitext"};
  const Json local = InProcess(names, 2, tasks::BosRegime::kTokenizer);
  const Json server = OnServer(*client_, names, 2, v1::BOS_MODE_TOKENIZER);
  testing::ExpectSameTaskResults(server, local, names);
}

}  // namespace
}  // namespace hgeval
