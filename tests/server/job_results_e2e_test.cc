// Job results too large for one message: WatchJob and GetJob leave them out (results_bytes
// says how large they are) and GetJobResults streams them in pieces; the client library
// and `hgeval run --output` return them whole. A full suite with per-sample records is
// ~100 MB of JSON, over the default 64 MiB message limit: before this, the client retried
// the oversized message for ten minutes and then failed.
#include <signal.h>

#include <fstream>
#include <sstream>

#include "client/client.h"
#include "gtest/gtest.h"
#include "hgeval/v1/jobs.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/server/server_fixture.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

class JobResultsTest : public testing::ServerFixture {
 protected:
  void SetUp() override {
    MakeDir("job-results");
    StartServer({"--model=hgrn2=" + SourcePath("tests/golden/hgrn2"),
                 "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
                 "--data_dir=" + SourcePath("data"), "--store=" + dir_ + "/s.sqlite",
                 "--max_inline_results_bytes=4096", "--shutdown_grace_ms=0"});
  }
};

TEST_F(JobResultsTest, ResultsOverTheInlineLimitArriveWhole) {
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  request.add_tasks("arc_easy");
  request.add_tasks("piqa");
  request.set_limit(6);
  request.mutable_options()->set_log_samples(true);
  absl::StatusOr<std::string> id = client_->SubmitJob(request);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Job> watched = client_->WatchJob(*id, nullptr);
  ASSERT_TRUE(watched.ok()) << watched.status();
  ASSERT_EQ(watched->state(), v1::JOB_STATE_SUCCEEDED) << watched->error();
  EXPECT_GT(watched->results_bytes(), 4096);
  EXPECT_EQ(static_cast<int64_t>(watched->results_json().size()), watched->results_bytes());
  const nlohmann::json results = nlohmann::json::parse(watched->results_json());
  EXPECT_EQ(results.at("samples").at("arc_easy").size(), 6u);
  EXPECT_EQ(results.at("samples").at("piqa").size(), 6u);

  // On the wire, GetJob leaves the results out and says how large they are.
  grpc::ClientContext context;
  v1::GetJobRequest get;
  get.set_job_id(*id);
  v1::Job raw;
  ASSERT_TRUE(client_->jobs().GetJob(&context, get, &raw).ok());
  EXPECT_TRUE(raw.results_json().empty());
  EXPECT_EQ(raw.results_bytes(), watched->results_bytes());
  absl::StatusOr<v1::Job> got = client_->GetJob(*id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->results_json(), watched->results_json());

  // The CLI writes the whole file.
  const std::string output = dir_ + "/results.json";
  std::string stdout_text;
  ASSERT_EQ(RunHgevalRun({"--model=hgrn2", "--tasks=arc_easy,piqa", "--limit=6", "--log_samples",
                          "--output=" + output},
                         &stdout_text),
            0)
      << stdout_text;
  std::ifstream in(output);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(nlohmann::json::parse(text.str()).at("samples").at("piqa").size(), 6u);
}

TEST_F(JobResultsTest, GetJobResultsOfAnUnfinishedOrUnknownJobIsRefused) {
  grpc::ClientContext context;
  v1::GetJobRequest get;
  get.set_job_id("no-such-job");
  auto reader = client_->jobs().GetJobResults(&context, get);
  v1::JobResultsChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace hgeval
