// The job manager (server/jobs/job_manager.h) in process, over a SQLite store and the
// golden HGRN2 checkpoint: Submit's checks, an identical live submission attaching to the
// job already queued, ids under their prefix, a cancel that ends a job once, and a job run
// by the manager's worker to its results.
#include "server/jobs/job_manager.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "server/store/sqlite_result_store.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {
namespace v1 = ::hgeval::v1;
using testing::SourcePath;

class JobManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenSqliteResultStore(testing::MakeTempDir("job-manager") + "/s.sqlite");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    RegistryOptions registry;
    ModelSpec spec;
    spec.name = "hgrn2";
    spec.path = SourcePath("tests/golden/hgrn2");
    spec.tokenizer = SourcePath("data/models/stories260K/tok512.bin");
    registry.models.push_back(spec);
    registry.threads = 1;
    registry_ = std::make_unique<ModelRegistry>(registry);
    executor_ = std::make_unique<Executor>(store_.get());
    JobManagerOptions options;
    options.data_dir = SourcePath("data");
    options.poll = absl::Milliseconds(50);
    jobs_ = std::make_unique<JobManager>(store_.get(), registry_.get(), executor_.get(), options);
  }
  void TearDown() override {
    if (jobs_ != nullptr) jobs_->Stop();
  }

  static v1::SubmitJobRequest Request(const std::string& task, int limit) {
    v1::SubmitJobRequest request;
    request.set_model("hgrn2");
    request.add_tasks(task);
    request.set_limit(limit);
    return request;
  }

  std::unique_ptr<ResultStore> store_;
  std::unique_ptr<ModelRegistry> registry_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<JobManager> jobs_;
};

TEST_F(JobManagerTest, SubmitRefusesUnknownTasksModelsAndFewShot) {
  EXPECT_EQ(jobs_->Submit(Request("no_such_task", 2)).status().code(), absl::StatusCode::kNotFound);
  v1::SubmitJobRequest unknown_model = Request("piqa", 2);
  unknown_model.set_model("no_such_model");
  EXPECT_EQ(jobs_->Submit(unknown_model).status().code(), absl::StatusCode::kNotFound);
  v1::SubmitJobRequest few_shot = Request("piqa", 2);
  few_shot.mutable_options()->set_num_fewshot(5);
  EXPECT_EQ(jobs_->Submit(few_shot).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<v1::Job>> listed = jobs_->List(10);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->empty());
}

TEST_F(JobManagerTest, AnIdenticalSubmissionAttachesToTheQueuedJob) {
  // Not started: no worker runs the job, so it stays queued.
  absl::StatusOr<std::string> first = jobs_->Submit(Request("piqa", 2), "unit");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(absl::StartsWith(*first, "unit-")) << *first;
  absl::StatusOr<std::string> again = jobs_->Submit(Request("piqa", 2), "unit");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *first);
  absl::StatusOr<std::string> other = jobs_->Submit(Request("piqa", 3), "unit");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*other, *first);

  absl::StatusOr<std::vector<v1::Job>> listed = jobs_->List(10);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 2u);
  absl::StatusOr<v1::Job> job = jobs_->Get(*first);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_QUEUED);
  EXPECT_EQ(job->model(), "hgrn2");
  EXPECT_EQ(job->limit(), 2);
}

TEST_F(JobManagerTest, ACancelEndsAQueuedJobOnce) {
  absl::StatusOr<std::string> id = jobs_->Submit(Request("piqa", 2));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Job> cancelled = jobs_->Cancel(*id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_->Cancel(*id).status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<v1::Job> read = jobs_->Get(*id);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(jobs_->Get("job-no-such-id").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobManagerTest, AStartedManagerRunsAJobToItsResults) {
  absl::StatusOr<std::string> id = jobs_->Submit(Request("piqa", 3));
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(jobs_->Start().ok());
  v1::Job last;
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  // Watch ends when `send` declines more (the job's final state) or at `give_up`.
  jobs_
      ->Watch(
          *id,
          [&last](v1::Job job) {
            last = std::move(job);
            return !IsFinalJobState(last.state());
          },
          [give_up] { return absl::Now() > give_up; })
      .IgnoreError();
  ASSERT_EQ(last.state(), v1::JOB_STATE_SUCCEEDED) << last.error();
  ASSERT_EQ(last.results_size(), 1);
  EXPECT_EQ(last.results(0).task(), "piqa");
  EXPECT_TRUE(last.results(0).metrics().contains("acc,none")) << last.DebugString();
  EXPECT_EQ(last.requests_done(), last.requests_total());
  EXPECT_GT(last.requests_total(), 0);
}

}  // namespace
}  // namespace hgeval::server
