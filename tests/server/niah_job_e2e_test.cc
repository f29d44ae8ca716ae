// NIAH sweeps as server jobs (hgeval niah --server ...): the job's cells equal an
// in-process sweep of the same model bit for bit, a repeated sweep comes from the store, a
// server killed mid-sweep resumes without computing any cell twice, cancelling stops it,
// bad specs get INVALID_ARGUMENT, and the CLI writes the JSON, CSV and heatmap PNG.
#include <signal.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/store/result_store.h"
#include "tasks/niah/sweep.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using Json = nlohmann::json;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

const std::vector<int64_t> kLengths = {300, 500, 800, 1100};
const std::vector<double> kDepths = {0, 25, 50, 75, 100};

std::vector<std::string> Args(const std::string& store) {
  return {"--model=hgrn2=" + SourcePath("tests/golden/hgrn2"),
          "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
          "--data_dir=" + SourcePath("data"), "--store=" + store, "--shutdown_grace_ms=0"};
}

v1::SubmitJobRequest NiahJob(int max_batch = 0) {
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  v1::NiahJobSpec& spec = *request.mutable_niah();
  spec.set_mode("easy");
  for (int64_t l : kLengths) spec.add_lengths(l);
  for (double d : kDepths) spec.add_depths(d);
  spec.set_max_new_tokens(16);
  spec.set_max_batch(max_batch);
  return request;
}

v1::Job RunToEnd(client::Client& client, const v1::SubmitJobRequest& request) {
  absl::StatusOr<std::string> id = client.SubmitJob(request);
  EXPECT_TRUE(id.ok()) << id.status();
  if (!id.ok()) return {};
  absl::StatusOr<v1::Job> job = client.WatchJob(*id, nullptr);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : v1::Job();
}

// The same sweep in this process, on the engine directly.
niah::NiahResult InProcessSweep(const std::string& model_dir = "tests/golden/hgrn2",
                                int64_t max_context = 0) {
  LoadOptions load;
  load.max_context = max_context;
  absl::StatusOr<std::unique_ptr<Model>> model = LoadModel(SourcePath(model_dir), load);
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer =
      LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
  EXPECT_TRUE(model.ok() && tokenizer.ok());
  niah::NiahOptions options;
  options.grid.lengths = kLengths;
  options.grid.depths = kDepths;
  options.max_new_tokens = 16;
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  absl::StatusOr<niah::NiahResult> result = niah::RunNiahSweep(**model, **tokenizer, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *std::move(result) : niah::NiahResult();
}

// Every cell's generation and score, and the metrics, equal the in-process sweep's.
void ExpectSameAsInProcess(const Json& job_json, const niah::NiahResult& expected) {
  const Json& cells = job_json.at("cells");
  ASSERT_EQ(cells.size(), expected.cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    const niah::NiahCellResult& want = expected.cells[i];
    SCOPED_TRACE(
        absl::StrCat("cell ", i, " length ", want.layout.length, " depth ", want.layout.depth));
    EXPECT_TRUE(cells[i].at("ran").get<bool>());
    EXPECT_EQ(cells[i].at("generated_tokens").get<std::vector<int32_t>>(), want.generated_tokens);
    EXPECT_EQ(cells[i].at("generated").get<std::string>(), want.generated);
    EXPECT_EQ(cells[i].at("score").get<double>(), want.score);
    EXPECT_EQ(cells[i].at("prompt_tokens").get<int64_t>(), want.prompt_tokens);
    EXPECT_EQ(cells[i].at("insertion_point").get<int64_t>(), want.layout.insertion_point);
  }
  const Json& metrics = job_json.at("metrics");
  EXPECT_EQ(metrics.at("weighted_average_accuracy").get<double>(),
            expected.metrics.weighted_average_accuracy);
  EXPECT_EQ(metrics.at("niah_score").get<double>(), expected.metrics.niah_score);
  EXPECT_EQ(metrics.at("average_accuracy").get<double>(), expected.metrics.average_accuracy);
}

class NiahJobTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir("niah-job"));
    server_ = new ServerProcess();
    ASSERT_TRUE(server_->Start(*dir_, Args(*dir_ + "/store.sqlite")).ok());
    client_ = testing::ConnectClient(server_->address()).release();
    ASSERT_TRUE(client_->WaitServing(absl::Seconds(60)).ok());
  }
  static void TearDownTestSuite() {
    delete client_;
    server_->Stop(SIGTERM);
    delete server_;
    delete dir_;
  }
  static std::string* dir_;
  static ServerProcess* server_;
  static client::Client* client_;
};
std::string* NiahJobTest::dir_ = nullptr;
ServerProcess* NiahJobTest::server_ = nullptr;
client::Client* NiahJobTest::client_ = nullptr;

TEST_F(NiahJobTest, JobEqualsTheInProcessSweepAndARepeatComesFromTheStore) {
  const v1::Job job = RunToEnd(*client_, NiahJob());
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  const int64_t cells = static_cast<int64_t>(kLengths.size() * kDepths.size());
  EXPECT_EQ(job.requests_total(), cells);
  EXPECT_EQ(job.requests_done(), cells);
  const Json json = Json::parse(job.results_json());
  ExpectSameAsInProcess(json, InProcessSweep());
  EXPECT_EQ(json.at("model"), "hgrn2");
  EXPECT_EQ(json.at("training_length"), 2048);  // config max_position_embeddings
  EXPECT_EQ(json.at("stats").at("cells_run"), cells);
  // The metrics are also published as the job's result "niah".
  ASSERT_EQ(job.results_size(), 1);
  EXPECT_EQ(job.results(0).task(), "niah");
  EXPECT_EQ(job.results(0).metrics().at("weighted_avg_acc,none"),
            json.at("metrics").at("weighted_average_accuracy").get<double>());
  // The grid CSV: a header and one row per cell.
  const std::vector<std::string> rows = absl::StrSplit(job.results_csv(), '\n', absl::SkipEmpty());
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].rfind("length,depth,score,success,generated", 0), 0u) << rows[0];

  // The same sweep again (naive feeding this time, which must not matter): every cell
  // from the store, identical cells.
  v1::SubmitJobRequest again = NiahJob();
  again.mutable_niah()->set_no_prefix_reuse(true);
  const v1::Job repeat = RunToEnd(*client_, again);
  ASSERT_EQ(repeat.state(), v1::JOB_STATE_SUCCEEDED) << repeat.error();
  EXPECT_EQ(repeat.requests_cached(), cells);
  const Json repeat_json = Json::parse(repeat.results_json());
  EXPECT_EQ(repeat_json.at("hgeval_job").at("cells_cached"), cells);
  EXPECT_EQ(repeat_json.at("hgeval_job").at("cells_computed"), 0);
  EXPECT_EQ(repeat_json.at("cells"), json.at("cells"));
  EXPECT_EQ(repeat_json.at("metrics"), json.at("metrics"));
  EXPECT_EQ(repeat.results_csv(), job.results_csv());
}

TEST_F(NiahJobTest, CancellingStopsTheSweep) {
  v1::SubmitJobRequest request = NiahJob(/*max_batch=*/1);
  request.mutable_niah()->set_max_new_tokens(20);  // not in the store yet
  absl::StatusOr<std::string> id = client_->SubmitJob(request);
  ASSERT_TRUE(id.ok()) << id.status();
  for (;;) {
    absl::StatusOr<v1::Job> job = client_->GetJob(*id);
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_NE(job->state(), v1::JOB_STATE_SUCCEEDED) << "finished before the cancel";
    if (job->requests_done() >= 1) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(client_->CancelJob(*id).ok());
  absl::StatusOr<v1::Job> job = client_->WatchJob(*id, nullptr);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_LT(job->requests_done(), job->requests_total());
  EXPECT_TRUE(job->results_json().empty());
  // The server keeps serving.
  EXPECT_EQ(*client_->Health(), "SERVING");
}

TEST_F(NiahJobTest, BadSpecsAreRejectedWithInvalidArgument) {
  struct Case {
    std::string name;
    std::function<void(v1::SubmitJobRequest&)> change;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"tasks and niah", [](auto& r) { r.add_tasks("piqa"); }, absl::StatusCode::kInvalidArgument,
       "takes no tasks"},
      {"mode", [](auto& r) { r.mutable_niah()->set_mode("hard"); },
       absl::StatusCode::kInvalidArgument, "hard"},
      {"preset", [](auto& r) { r.mutable_niah()->set_preset("huge"); },
       absl::StatusCode::kInvalidArgument, "huge"},
      {"depth", [](auto& r) { r.mutable_niah()->add_depths(101); },
       absl::StatusCode::kInvalidArgument, "depth"},
      {"scorer", [](auto& r) { r.mutable_niah()->set_scorer("gpt4"); },
       absl::StatusCode::kInvalidArgument, "gpt4"},
      {"no room for the needle", [](auto& r) { r.mutable_niah()->set_buffer_tokens(290); },
       absl::StatusCode::kInvalidArgument, "no room for the"},
      {"too long", [](auto& r) { r.mutable_niah()->add_lengths(40000); },
       absl::StatusCode::kInvalidArgument, "sequence limit of model 'hgrn2' (32768 tokens)"},
      {"too many cells (15M; the server used to build them all and abort)",
       [](auto& r) {
         for (int i = 1; i <= 150; ++i) r.mutable_niah()->add_lengths(100 * i);
         for (int i = 0; i <= 100000; ++i) r.mutable_niah()->add_depths(i / 1000.0);
       },
       absl::StatusCode::kInvalidArgument, "over the limit of 16384 cells per job"},
      {"max_new_tokens", [](auto& r) { r.mutable_niah()->set_max_new_tokens(0); },
       absl::StatusCode::kInvalidArgument, "max_new_tokens"},
      {"NaN threshold (used to succeed with zero metrics)",
       [](auto& r) { r.mutable_niah()->set_threshold(std::nan("")); },
       absl::StatusCode::kInvalidArgument, "threshold must be a finite number"},
      {"NaN depth_alpha", [](auto& r) { r.mutable_niah()->set_depth_alpha(std::nan("")); },
       absl::StatusCode::kInvalidArgument, "depth_alpha and length_alpha must be finite"},
      {"invalid UTF-8 stop string",
       [](auto& r) { r.mutable_niah()->add_stop_strings(std::string("\xff\xfe", 2)); },
       absl::StatusCode::kInvalidArgument, "UTF-8"},
      {"unknown model", [](auto& r) { r.set_model("nope"); }, absl::StatusCode::kNotFound, "nope"},
  };
  for (const Case& c : cases) {
    v1::SubmitJobRequest request = NiahJob();
    c.change(request);
    absl::StatusOr<std::string> id = client_->SubmitJob(request);
    ASSERT_FALSE(id.ok()) << c.name;
    EXPECT_EQ(id.status().code(), c.code) << c.name << ": " << id.status();
    EXPECT_NE(id.status().message().find(c.message), std::string::npos)
        << c.name << ": " << id.status();
  }
  EXPECT_EQ(*client_->Health(), "SERVING");
}

TEST_F(NiahJobTest, CliWritesResultsGridAndHeatmap) {
  const std::string out = *dir_ + "/cli-out";
  std::string stdout_text;
  const int rc = testing::RunCommand(
      {testing::ClientBinary(), "niah", "--server=" + server_->address(), "--model=hgrn2",
       "--mode=standard", "--lengths=300,600", "--depths=0,50,100", "--max_tokens=8",
       "--progress=false", "--output_dir=" + out},
      &stdout_text);
  ASSERT_EQ(rc, 0) << stdout_text;
  EXPECT_NE(stdout_text.find("weighted_avg_acc"), std::string::npos) << stdout_text;
  std::ifstream json_in(out + "/niah_results.json");
  const Json json = Json::parse(json_in);
  EXPECT_EQ(json.at("mode"), "standard");
  EXPECT_EQ(json.at("grid").at("lengths"), Json({300, 600}));
  EXPECT_EQ(json.at("cells").size(), 6u);
  std::ifstream csv_in(out + "/niah_grid.csv");
  int csv_lines = 0;
  for (std::string line; std::getline(csv_in, line);) ++csv_lines;
  EXPECT_EQ(csv_lines, 7);
  // A PNG of the heatmap's default size (IHDR width and height, big-endian).
  std::ifstream png(out + "/niah_heatmap.png", std::ios::binary);
  std::string head(24, '\0');
  png.read(head.data(), 24);
  ASSERT_TRUE(png.good());
  EXPECT_EQ(head.substr(1, 3), "PNG");
  auto be32 = [&](int at) {
    return (static_cast<uint32_t>(static_cast<uint8_t>(head[at])) << 24) |
           (static_cast<uint32_t>(static_cast<uint8_t>(head[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<uint8_t>(head[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<uint8_t>(head[at + 3]));
  };
  EXPECT_EQ(be32(16), 1400u);
  EXPECT_EQ(be32(20), 700u);

  // Re-attaching to the finished job (--job, as after a stopped client) writes the same
  // results without submitting anything new.
  const std::string job_id = json.at("hgeval_job").at("id").get<std::string>();
  absl::StatusOr<v1::ListJobsResponse> before = client_->ListJobs(100);
  ASSERT_TRUE(before.ok());
  const std::string again = *dir_ + "/cli-again";
  ASSERT_EQ(testing::RunCommand({testing::ClientBinary(), "niah", "--server=" + server_->address(),
                                 "--job=" + job_id, "--progress=false", "--output_dir=" + again},
                                &stdout_text),
            0)
      << stdout_text;
  std::ifstream again_in(again + "/niah_results.json");
  EXPECT_EQ(Json::parse(again_in), json);
  absl::StatusOr<v1::ListJobsResponse> after = client_->ListJobs(100);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->jobs_size(), before->jobs_size());
}

TEST(NiahJobLlamaTest, KvCacheSnapshotsPastTheTrainingLengthEqualTheInProcessSweep) {
  // The golden LLaMA was trained to 1024 positions; the grid reaches 1100 tokens, so the
  // server loads it with --max_context (RoPE extrapolation) and the cells continue from
  // KV-cache snapshots.
  const std::string dir = testing::MakeTempDir("niah-llama");
  ServerProcess server;
  ASSERT_TRUE(server
                  .Start(dir, {"--model=llama=" + SourcePath("tests/golden/llama"),
                               "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
                               "--data_dir=" + SourcePath("data"), "--store=" + dir + "/s.sqlite",
                               "--max_context=2048", "--shutdown_grace_ms=0"})
                  .ok());
  auto client = testing::ConnectClient(server.address());
  ASSERT_TRUE(client->WaitServing(absl::Seconds(60)).ok());
  v1::SubmitJobRequest request = NiahJob();
  request.set_model("llama");
  const v1::Job job = RunToEnd(*client, request);
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.error();
  const Json json = Json::parse(job.results_json());
  EXPECT_EQ(json.at("training_length"), 1024);  // the dashed line stays at the training length
  ExpectSameAsInProcess(json, InProcessSweep("tests/golden/llama", 2048));
  server.Stop(SIGTERM);
}

TEST(NiahJobCrashTest, KilledMidSweepResumesWithoutComputingAnyCellTwice) {
  const std::string dir = testing::MakeTempDir("niah-crash");
  const std::string store = dir + "/store.sqlite";
  ServerProcess server;
  ASSERT_TRUE(server.Start(dir, Args(store)).ok());
  const std::string address = server.address();
  auto client = testing::ConnectClient(address);
  ASSERT_TRUE(client->WaitServing(absl::Seconds(60)).ok());
  absl::StatusOr<std::string> id = client->SubmitJob(NiahJob(/*max_batch=*/1));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Job> watched;
  std::thread watcher([&] {
    watched = testing::ConnectClient(address)->WatchJob(*id, nullptr, absl::Seconds(60));
  });
  for (;;) {
    absl::StatusOr<v1::Job> job = client->GetJob(*id);
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_NE(job->state(), v1::JOB_STATE_SUCCEEDED) << "finished before the kill";
    if (job->requests_done() >= 4) break;
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(server.Stop(SIGKILL), -SIGKILL);
  int64_t stored_at_kill = 0;
  {
    auto s = server::ResultStore::Open(store);
    ASSERT_TRUE(s.ok());
    stored_at_kill = (*s)->Stats()->results;
  }
  EXPECT_GE(stored_at_kill, 4);
  EXPECT_LT(stored_at_kill, static_cast<int64_t>(kLengths.size() * kDepths.size()));
  const std::string port = address.substr(address.rfind(':') + 1);
  ServerProcess restarted;
  ASSERT_TRUE(restarted.Start(dir, Args(store), absl::Seconds(30), "127.0.0.1:" + port).ok());
  watcher.join();
  ASSERT_TRUE(watched.ok()) << watched.status();
  ASSERT_EQ(watched->state(), v1::JOB_STATE_SUCCEEDED) << watched->error();
  const Json json = Json::parse(watched->results_json());
  const int64_t cells = static_cast<int64_t>(kLengths.size() * kDepths.size());
  EXPECT_EQ(json.at("hgeval_job").at("cells_cached").get<int64_t>(), stored_at_kill);
  EXPECT_EQ(json.at("hgeval_job").at("cells_computed").get<int64_t>(), cells - stored_at_kill);
  ExpectSameAsInProcess(json, InProcessSweep());
  restarted.Stop(SIGTERM);
  auto s = server::ResultStore::Open(store);
  ASSERT_TRUE(s.ok());
  auto stats = (*s)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->results, cells);
  EXPECT_EQ(stats->max_compute_count, 1);
}

}  // namespace
}  // namespace hgeval
