// README's lm-eval arguments (issue 30): lm-eval's `local-completions` with the remote
// tokenizer (replayed: tests/server/lm_eval_http_model.h) reproduces hgeval-eval bit for
// bit on wikitext (rolling windows, several per document) and a multiple-choice task,
// through the unscoped and the model-scoped base_url, when lm-eval's max_length is
// hgeval-eval's plus 2 (lm-eval's API model keeps max_length - 1 tokens per input, one
// more for the generated token, and rolling windows of max_length - 2):
//   - a recurrent model: max_length = lm_eval_max_length + 2 reproduces the default;
//   - a model with a context limit (stories260K, 512): max_length = 512 reproduces
//     hgeval-eval --max_length 510 (an input may not pass max_model_len);
//   - the tokenizer BOS regime: a model listed in --http_tokenizer_bos reproduces
//     hgeval-eval --bos=tokenizer; the others --bos=none.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"
#include "tests/server/lm_eval_http_model.h"
#include "tests/server/lm_eval_routes.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;

const std::vector<std::string> kTasks = {"wikitext", "arc_easy"};
constexpr int kLimit = 3;

std::string Stories() { return testing::SourcePath("data/models/stories260K/stories260K.bin"); }
std::string Hgrn2() { return testing::SourcePath("tests/golden/hgrn2"); }
std::string Tok512() { return testing::SourcePath("data/models/stories260K/tok512.bin"); }

class LmEvalHttpArgsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new testing::ServerProcess();
    absl::StatusOr<int> port = testing::StartWithHttp(
        *server_, "lm-eval-http-args",
        {"--model=hgrn2=" + Hgrn2() + ",stories=" + Stories() + ",stories_bos=" + Stories(),
         "--tokenizer=" + Tok512(), "--http_tokenizer_bos=stories_bos",
         "--store=:memory:", "--threads=1", "--preload=all"});
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
    std::unique_ptr<client::Client> grpc = testing::ConnectClient(server_->address());
    absl::StatusOr<v1::ListModelsResponse> models = grpc->ListModels();
    ASSERT_TRUE(models.ok()) << models.status();
    for (const v1::ModelInfo& m : models->models()) info_[m.name()] = m;
  }
  static void TearDownTestSuite() { delete server_; }

  static Json OverHttp(const std::string& model, const std::string& base_path, int64_t max_length) {
    testing::LmEvalHttpOptions options;
    options.port = port_;
    options.model = model;
    options.base_path = base_path;
    options.max_length = max_length;
    testing::LmEvalHttpModel lm(options);
    tasks::EvaluatorOptions evaluator;
    evaluator.limit = kLimit;
    evaluator.data_dir = testing::SourcePath("data");
    evaluator.log_samples = true;
    absl::StatusOr<tasks::EvaluationReport> report = tasks::RunTasks(lm, kTasks, evaluator);
    EXPECT_TRUE(report.ok()) << report.status();
    if (!report.ok()) return Json();
    Json out = tasks::ResultsJson(*report);
    for (const tasks::TaskReport& task : report->tasks) out["samples"][task.name] = task.samples;
    return out;
  }

  static void ExpectSameNumbers(const Json& http, const Json& in_process) {
    ASSERT_TRUE(http.is_object() && in_process.is_object());
    for (const std::string& task : kTasks) {
      SCOPED_TRACE(task);
      ASSERT_EQ(http["samples"][task].size(), in_process["samples"][task].size());
      for (size_t i = 0; i < in_process["samples"][task].size(); ++i) {
        EXPECT_EQ(http["samples"][task][i]["resps"], in_process["samples"][task][i]["resps"]);
      }
      EXPECT_EQ(http["results"][task], in_process["results"][task]);
    }
  }

  static testing::ServerProcess* server_;
  static int port_;
  static std::map<std::string, v1::ModelInfo> info_;
};

testing::ServerProcess* LmEvalHttpArgsTest::server_ = nullptr;
int LmEvalHttpArgsTest::port_ = 0;
std::map<std::string, v1::ModelInfo> LmEvalHttpArgsTest::info_;

TEST_F(LmEvalHttpArgsTest, RecurrentModelLmEvalMaxLengthPlusTwoReproducesTheDefault) {
  const int64_t max_length = info_.at("hgrn2").lm_eval_max_length();
  ASSERT_GT(max_length, 0);
  const Json in_process =
      testing::RunInProcess(Hgrn2(), Tok512(), kTasks, kLimit, tasks::BosRegime::kNone);
  for (const std::string base : {"", "/models/hgrn2"}) {
    SCOPED_TRACE("base_url " + base);
    ExpectSameNumbers(OverHttp("hgrn2", base, max_length + 2), in_process);
  }
  // lm_eval_max_length itself gives other windows, so other wikitext numbers.
  const Json off = OverHttp("hgrn2", "", max_length);
  ASSERT_TRUE(off.is_object());
  EXPECT_NE(off["results"]["wikitext"], in_process["results"]["wikitext"]);
}

TEST_F(LmEvalHttpArgsTest, ContextLimitedModelMaxModelLenReproducesMaxLengthTwoLess) {
  const int64_t max_model_len = info_.at("stories").max_sequence_tokens();
  ASSERT_EQ(max_model_len, 512);
  const Json in_process = testing::RunInProcess(Stories(), Tok512(), kTasks, kLimit,
                                                tasks::BosRegime::kNone, max_model_len - 2);
  ExpectSameNumbers(OverHttp("stories", "/models/stories", max_model_len), in_process);
}

TEST_F(LmEvalHttpArgsTest, HttpTokenizerBosReproducesTheTokenizerRegime) {
  const int64_t max_model_len = info_.at("stories_bos").max_sequence_tokens();
  const Json in_process = testing::RunInProcess(Stories(), Tok512(), kTasks, kLimit,
                                                tasks::BosRegime::kTokenizer, max_model_len - 2);
  ExpectSameNumbers(OverHttp("stories_bos", "/models/stories_bos", max_model_len), in_process);
  // The same model without the option is the no-BOS regime: other numbers.
  const Json none = OverHttp("stories", "/models/stories", max_model_len);
  ASSERT_TRUE(none.is_object());
  EXPECT_NE(none["results"]["arc_easy"], in_process["results"]["arc_easy"]);
}

}  // namespace
}  // namespace hgeval
