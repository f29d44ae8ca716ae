// One task, one model, the same numbers through every route (issue 10, acceptance 1): the
// in-process evaluator (what hgeval-eval runs), a server job (hgeval run) and per-request
// RPC scoring from the client (hgeval run --local, RemoteLanguageModel) give bit-identical
// per-sample log-likelihoods and metrics for the eleven lm-eval tasks, and the same
// recorded run facts (model and tokenizer hashes, BOS regime, max_length, limit, n-shot,
// task configs and versions). Each route runs with its own defaults, then with
// lm-eval <= 0.4.9.1's "no BOS" set on each. NIAH: the in-process sweep, a server job and
// the cells' prompts sent one by one to the Generate RPC give the same generations and
// scores.
#include <signal.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/tokenizer/continuation_text.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tasks/models/engine_language_model.h"
#include "tasks/niah/context.h"
#include "tasks/niah/haystack.h"
#include "tasks/niah/output.h"
#include "tasks/niah/sweep.h"
#include "tests/server/lm_eval_routes.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

constexpr char kModel[] = "data/models/stories260K/stories260K.bin";
constexpr char kTokenizer[] = "data/models/stories260K/tok512.bin";

// lm-eval's eleven: the eight multiple-choice tasks and lambada (both) on 3 docs each;
// wikitext on one (its documents run to thousands of tokens).
const std::vector<std::string> kTasks = {
    "arc_easy",  "arc_challenge", "openbookqa", "social_iqa",     "piqa",
    "hellaswag", "winogrande",    "boolq",      "lambada_openai", "lambada_standard"};
const std::vector<std::string> kWikitext = {"wikitext"};

// The three routes on the server's "stories". bos: none (each route's default left alone)
// or lm-eval <= 0.4.9.1's regime.
enum class Bos { kRouteDefault, kNone };

Json InProcess(const std::vector<std::string>& task_names, int limit, Bos bos) {
  return testing::RunInProcess(
      SourcePath(kModel), SourcePath(kTokenizer), task_names, limit,
      bos == Bos::kNone ? std::optional(tasks::BosRegime::kNone) : std::nullopt);
}
std::optional<v1::BosMode> WireBos(Bos bos) {
  return bos == Bos::kNone ? std::optional(v1::BOS_MODE_NONE) : std::nullopt;
}
Json Job(client::Client& client, const std::vector<std::string>& task_names, int limit, Bos bos) {
  return testing::RunAsJob(client, "stories", task_names, limit, WireBos(bos));
}
Json PerRequest(client::Client& client, const std::vector<std::string>& task_names, int limit,
                Bos bos) {
  return testing::RunPerRequest(client, "stories", task_names, limit, WireBos(bos));
}

// Per-sample records, metrics, task facts and the recorded facts of the run, equal.
// What legitimately differs is left out: how the model is named (a path in process, the
// registry name on the server), timings and the work counters (the client reuses no
// context, so it feeds more tokens).
void ExpectSameRun(const Json& got, const Json& want, const std::vector<std::string>& task_names,
                   const std::string& route) {
  SCOPED_TRACE(route);
  testing::ExpectSameTaskResults(got, want, task_names);
  if (!got.is_object() || !want.is_object()) return;
  EXPECT_EQ(got.contains("groups"), want.contains("groups"));
  if (want.contains("groups")) EXPECT_EQ(got.at("groups"), want.at("groups"));
  for (const char* key :
       {"model_hash", "model_family", "tokenizer_hash", "bos_regime", "max_length",
        "prefix_token_id", "dtype", "backend", "device", "rolling_mode", "limit", "bootstrap_iters",
        "batch_size", "gen_kwargs", "random_seed", "fewshot_seed"}) {
    EXPECT_EQ(got.at("config").at(key), want.at("config").at(key)) << key;
  }
  EXPECT_EQ(got.at("max_length"), want.at("max_length"));
}

class CrossRouteTest : public ::testing::Test {
 protected:
  // Two servers, each with its own store, so that neither route reads results the other
  // computed: the job's and the RPCs' own computations are compared.
  static void SetUpTestSuite() {
    for (int i = 0; i < 2; ++i) {
      const std::string dir = testing::MakeTempDir(absl::StrCat("cross-route-", i));
      servers_[i] = new ServerProcess();
      ASSERT_TRUE(servers_[i]
                      ->Start(dir, {"--model=stories=" + SourcePath(kModel),
                                    "--tokenizer=" + SourcePath(kTokenizer),
                                    "--data_dir=" + SourcePath("data"),
                                    "--store=" + dir + "/s.sqlite", "--shutdown_grace_ms=0"})
                      .ok());
      clients_[i] = testing::ConnectClient(servers_[i]->address()).release();
      ASSERT_TRUE(clients_[i]->WaitServing(absl::Seconds(60)).ok());
    }
  }
  static void TearDownTestSuite() {
    for (int i = 0; i < 2; ++i) {
      delete clients_[i];
      if (servers_[i] != nullptr) servers_[i]->Stop(SIGTERM);
      delete servers_[i];
    }
  }
  static client::Client& job_client() { return *clients_[0]; }
  static client::Client& rpc_client() { return *clients_[1]; }

  static ServerProcess* servers_[2];
  static client::Client* clients_[2];
};
ServerProcess* CrossRouteTest::servers_[2] = {nullptr, nullptr};
client::Client* CrossRouteTest::clients_[2] = {nullptr, nullptr};

TEST_F(CrossRouteTest, ElevenTasksWithEveryRoutesDefaults) {
  for (const auto& [names, limit] : {std::pair(kTasks, 3), std::pair(kWikitext, 1)}) {
    const Json local = InProcess(names, limit, Bos::kRouteDefault);
    ASSERT_FALSE(local.is_null());
    // Every route's default is lm-eval >= 0.4.9.2's rule, and says so.
    EXPECT_EQ(local.at("config").at("bos_regime"), "tokenizer");
    EXPECT_FALSE(local.at("config").at("model_hash").get<std::string>().empty());
    ExpectSameRun(Job(job_client(), names, limit, Bos::kRouteDefault), local, names, "server job");
    ExpectSameRun(PerRequest(rpc_client(), names, limit, Bos::kRouteDefault), local, names,
                  "per-request RPCs");
  }
}

TEST_F(CrossRouteTest, ElevenTasksWithoutBos) {
  for (const auto& [names, limit] : {std::pair(kTasks, 3), std::pair(kWikitext, 1)}) {
    const Json local = InProcess(names, limit, Bos::kNone);
    ASSERT_FALSE(local.is_null());
    EXPECT_EQ(local.at("config").at("bos_regime"), "none");
    // The regime matters for this model (its tokenizer adds BOS), so the comparison
    // below could not pass with a route that ignored it.
    EXPECT_NE(local.at("samples"), InProcess(names, 1, Bos::kRouteDefault).at("samples"));
    ExpectSameRun(Job(job_client(), names, limit, Bos::kNone), local, names, "server job");
    ExpectSameRun(PerRequest(rpc_client(), names, limit, Bos::kNone), local, names,
                  "per-request RPCs");
  }
}

// generate_until: greedy generations cut at the stop string, prompts cut to leave the
// generation budget (max_length 512, 256 new tokens), ROUGE over them.
TEST_F(CrossRouteTest, GenerationTasks) {
  const std::vector<std::string> names = {"scrolls_qmsum"};
  const Json local = InProcess(names, 3, Bos::kRouteDefault);
  ASSERT_FALSE(local.is_null());
  size_t generated_bytes = 0;  // the generations are text, not all cut to nothing
  for (const Json& sample : local.at("samples").at("scrolls_qmsum")) {
    generated_bytes += sample.at("resps").at(0).get<std::string>().size();
  }
  EXPECT_GT(generated_bytes, 0u);
  ExpectSameRun(Job(job_client(), names, 3, Bos::kRouteDefault), local, names, "server job");
  ExpectSameRun(PerRequest(rpc_client(), names, 3, Bos::kRouteDefault), local, names,
                "per-request RPCs");
}

// NIAH: a tiny grid. The sweep in process, the sweep as a job, and each cell's prompt as
// one Generate call (greedy, the sweep's stop string and token budget).
TEST_F(CrossRouteTest, NiahGridEqualsOnEveryRoute) {
  const std::vector<int64_t> lengths = {300, 450};
  const std::vector<double> depths = {0, 50, 100};
  constexpr int kNewTokens = 16;

  // As hgeval-niah opens it: the checkpoint's content hash is the results' model_hash.
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = OpenModelCheckpoint(SourcePath(kModel));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  absl::StatusOr<std::unique_ptr<Model>> model = BuildModel(**checkpoint, LoadOptions());
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadTokenizer(SourcePath(kTokenizer));
  ASSERT_TRUE(model.ok() && tokenizer.ok());
  niah::NiahOptions options;
  options.model_hash = (*checkpoint)->ContentHash();
  options.grid.lengths = lengths;
  options.grid.depths = depths;
  options.max_new_tokens = kNewTokens;
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  absl::StatusOr<niah::NiahResult> local = niah::RunNiahSweep(**model, **tokenizer, options);
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ(local->cells.size(), lengths.size() * depths.size());

  v1::SubmitJobRequest request;
  request.set_model("stories");
  v1::NiahJobSpec& spec = *request.mutable_niah();
  for (int64_t l : lengths) spec.add_lengths(l);
  for (double d : depths) spec.add_depths(d);
  spec.set_max_new_tokens(kNewTokens);
  absl::StatusOr<std::string> id = job_client().SubmitJob(request);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Job> job = job_client().WatchJob(*id, nullptr);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->error();
  const Json job_json = Json::parse(job->results_json());
  // One model hash and tokenizer hash in both results files.
  const Json local_json = Json::parse(niah::NiahResultToJson(*local));
  EXPECT_FALSE(local_json.at("model_hash").get<std::string>().empty());
  EXPECT_EQ(job_json.at("model_hash"), local_json.at("model_hash"));
  EXPECT_FALSE(local_json.at("tokenizer_hash").get<std::string>().empty());
  EXPECT_EQ(job_json.at("tokenizer_hash"), local_json.at("tokenizer_hash"));
  const Json& job_cells = job_json.at("cells");
  ASSERT_EQ(job_cells.size(), local->cells.size());

  // The prompts as the sweep builds them, each sent alone.
  absl::StatusOr<std::vector<niah::Essay>> essays = niah::ReadHaystackEssays(options.essays_dir);
  ASSERT_TRUE(essays.ok()) << essays.status();
  absl::StatusOr<std::vector<int32_t>> haystack =
      niah::BuildHaystackTokens(**tokenizer, *essays, lengths.back());
  ASSERT_TRUE(haystack.ok()) << haystack.status();
  const niah::NiahTexts texts = niah::DefaultNiahTexts(options.mode);
  absl::StatusOr<niah::NiahContextBuilder> builder =
      niah::NiahContextBuilder::Create(**tokenizer, *haystack, texts, options.buffer_tokens);
  ASSERT_TRUE(builder.ok()) << builder.status();

  for (size_t i = 0; i < local->cells.size(); ++i) {
    const niah::NiahCellResult& want = local->cells[i];
    SCOPED_TRACE(absl::StrCat("length ", want.layout.length, " depth ", want.layout.depth));
    ASSERT_TRUE(want.ran);
    EXPECT_EQ(job_cells[i].at("generated").get<std::string>(), want.generated);
    EXPECT_EQ(job_cells[i].at("generated_tokens").get<std::vector<int32_t>>(),
              want.generated_tokens);
    EXPECT_EQ(job_cells[i].at("score").get<double>(), want.score);

    absl::StatusOr<niah::NiahCellLayout> layout =
        builder->Layout(want.layout.length, want.layout.depth);
    ASSERT_TRUE(layout.ok()) << layout.status();
    v1::GenerateRequest generate;
    generate.set_model("stories");
    for (int32_t id : builder->PromptTokens(*layout)) generate.add_prompt_ids(id);
    generate.set_max_tokens(kNewTokens);
    for (const std::string& stop : options.stop_strings) generate.add_until(stop);
    generate.set_no_cache(true);
    absl::StatusOr<v1::GenerateResponse> whole = rpc_client().Generate(generate);
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_EQ(whole->prompt_tokens(), want.prompt_tokens);
    const std::vector<int32_t> ids(whole->token_ids().begin(), whole->token_ids().end());
    EXPECT_EQ(ids, want.generated_tokens);
    // The service's text is the exact continuation (decoded after the prompt); the sweep
    // keeps the NIAH reference's rule, the generated ids decoded alone.
    absl::StatusOr<std::string> exact =
        ContinuationText(**tokenizer, builder->PromptTokens(*layout), ids);
    ASSERT_TRUE(exact.ok()) << exact.status();
    EXPECT_EQ(whole->text(), CutAtStopStrings(*exact, options.stop_strings));
    absl::StatusOr<std::string> alone = (*tokenizer)->Decode(ids);
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ(CutAtStopStrings(*alone, options.stop_strings), want.generated);
    niah::NiahCellResult by_rpc;
    by_rpc.layout = *layout;
    by_rpc.generated = CutAtStopStrings(*alone, options.stop_strings);
    niah::ScoreNiahCell(options, texts, by_rpc);
    EXPECT_EQ(by_rpc.score, want.score);
  }
  EXPECT_EQ(job_json.at("metrics").at("weighted_average_accuracy").get<double>(),
            local->metrics.weighted_average_accuracy);
  EXPECT_EQ(job_json.at("metrics").at("niah_score").get<double>(), local->metrics.niah_score);
}

}  // namespace
}  // namespace hgeval
