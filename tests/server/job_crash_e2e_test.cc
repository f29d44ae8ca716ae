// Crash resilience: a job (2,000 piqa loglikelihood requests; or SCROLLS qmsum's 272
// greedy generations over long meetings), the server killed with SIGKILL mid-job and
// restarted on the same store and port. The job completes, the watching client rides
// through the restart, the store shows no request computed twice, and the results equal
// an uninterrupted run's.
#include <signal.h>

#include <ostream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "server/jobs/job_shard_outcome.h"
#include "server/store/result_store.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

struct CrashCase {
  std::string task;
  int limit = 0;           // docs (0: all)
  int64_t min_requests;    // the job is at least this large
  int64_t kill_after;      // requests done before the kill
  int64_t shard_requests;  // the job's shard size: the kill falls inside a shard
};

// gtest prints a parameter into the ctest name; its bytes would hold pointers that change
// from run to run.
void PrintTo(const CrashCase& c, std::ostream* os) { *os << c.task; }

std::vector<std::string> Args(const std::string& store) {
  return {"--model=hgrn2=" + SourcePath("tests/golden/hgrn2"),
          "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
          "--data_dir=" + SourcePath("data"), "--store=" + store, "--shutdown_grace_ms=0"};
}

v1::SubmitJobRequest Job(const CrashCase& c) {
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  request.add_tasks(c.task);
  if (c.limit > 0) request.set_limit(c.limit);
  request.mutable_options()->set_shard_requests(c.shard_requests);
  return request;
}

class JobCrashTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(JobCrashTest, KilledMidJobResumesWithoutRecomputingAndMatchesAnUninterruptedRun) {
  const CrashCase& c = GetParam();
  const std::string dir = testing::MakeTempDir("job-crash");
  // Uninterrupted reference run.
  absl::StatusOr<v1::Job> reference_run =
      testing::RunJobOnNewServer(dir, Args(dir + "/reference.sqlite"), Job(c));
  ASSERT_TRUE(reference_run.ok()) << reference_run.status();
  ASSERT_EQ(reference_run->state(), v1::JOB_STATE_SUCCEEDED) << reference_run->error();
  const v1::Job& reference = *reference_run;
  ASSERT_GE(reference.requests_total(), c.min_requests);

  // The same job on a fresh store, killed part-way.
  const std::string store = dir + "/crash.sqlite";
  ServerProcess server;
  ASSERT_TRUE(server.Start(dir, Args(store)).ok());
  const std::string address = server.address();
  auto client = testing::ConnectClient(address);
  ASSERT_TRUE(client->WaitServing(absl::Seconds(30)).ok());
  auto id = client->SubmitJob(Job(c));
  ASSERT_TRUE(id.ok()) << id.status();
  // A watcher that must survive the crash by re-watching.
  absl::StatusOr<v1::Job> watched;
  std::thread watcher([&] {
    watched = testing::ConnectClient(address)->WatchJob(*id, nullptr, absl::Seconds(60));
  });
  int64_t done_before_kill = 0;
  for (;;) {
    auto job = client->GetJob(*id);
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_NE(job->state(), v1::JOB_STATE_SUCCEEDED) << "the job finished before the kill";
    if (job->requests_done() >= c.kill_after) {
      done_before_kill = job->requests_done();
      break;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(server.Stop(SIGKILL), -SIGKILL);
  int64_t stored_at_kill = 0;
  // The shards (ranges of docs) finished before the kill: their requests and how many of
  // them they answered from the store. They are not run again.
  int64_t finished_requests_at_kill = 0, finished_cached_at_kill = 0;
  {
    auto s = server::ResultStore::Open(store);
    ASSERT_TRUE(s.ok());
    stored_at_kill = (*s)->Stats()->results;
    auto shards = (*s)->JobShards(*id);
    ASSERT_TRUE(shards.ok()) << shards.status();
    for (const server::JobShard& shard : *shards) {
      if (shard.state != server::kShardDone) continue;
      auto outcome = server::ParseShardOutcome(shard.result);
      ASSERT_TRUE(outcome.ok()) << outcome.status();
      if (outcome->kind == server::ShardKind::kReport) continue;
      finished_requests_at_kill += outcome->requests_total;
      finished_cached_at_kill += outcome->requests_cached;
    }
  }
  EXPECT_GT(stored_at_kill, 0);
  EXPECT_GT(stored_at_kill, finished_requests_at_kill) << "the kill fell between shards";
  const std::string port = address.substr(address.rfind(':') + 1);
  ServerProcess restarted;
  ASSERT_TRUE(restarted.Start(dir, Args(store), absl::Seconds(30), "127.0.0.1:" + port).ok());
  watcher.join();
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(watched->state(), v1::JOB_STATE_SUCCEEDED) << watched->error();
  auto final_job = client->GetJob(*id);
  ASSERT_TRUE(final_job.ok()) << final_job.status();
  ASSERT_EQ(final_job->state(), v1::JOB_STATE_SUCCEEDED) << final_job->error();
  // Everything stored before the kill was answered from the store after it: the shards
  // it interrupted found their stored requests there (and the finished ones kept theirs).
  EXPECT_GE(final_job->requests_cached() - finished_cached_at_kill,
            stored_at_kill - finished_requests_at_kill);
  EXPECT_EQ(final_job->requests_done(), reference.requests_done());
  // The same numbers as the uninterrupted run.
  ASSERT_EQ(final_job->results_size(), reference.results_size());
  for (int t = 0; t < reference.results_size(); ++t) {
    EXPECT_EQ(final_job->results(t).task(), reference.results(t).task());
    EXPECT_EQ(final_job->results(t).samples(), reference.results(t).samples());
    ASSERT_EQ(final_job->results(t).metrics_size(), reference.results(t).metrics_size());
    for (const auto& [name, value] : reference.results(t).metrics()) {
      ASSERT_TRUE(final_job->results(t).metrics().contains(name)) << name;
      EXPECT_EQ(final_job->results(t).metrics().at(name), value) << name;
    }
  }
  restarted.Stop(SIGTERM);
  // No request computed twice; every request of the job is in the store once.
  auto s = server::ResultStore::Open(store);
  ASSERT_TRUE(s.ok());
  auto stats = (*s)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->max_compute_count, 1);
  EXPECT_EQ(stats->computations, stats->results);
  auto reference_store = server::ResultStore::Open(dir + "/reference.sqlite");
  EXPECT_EQ(stats->results, (*reference_store)->Stats()->results);
  std::printf(
      "requests %lld, done before kill %lld, stored at kill %lld (%lld in finished shards), "
      "distinct %lld\n",
      static_cast<long long>(final_job->requests_done()), static_cast<long long>(done_before_kill),
      static_cast<long long>(stored_at_kill), static_cast<long long>(finished_requests_at_kill),
      static_cast<long long>(stats->results));
}

INSTANTIATE_TEST_SUITE_P(Jobs, JobCrashTest,
                         // piqa: 2 requests per doc, 4 ranges of 500, killed in the second;
                         // qmsum: 3 ranges, killed in the first.
                         ::testing::Values(CrashCase{"piqa", 1000, 2000, 600, 500},
                                           CrashCase{"scrolls_qmsum", 0, 272, 60, 100}),
                         [](const auto& info) { return info.param.task; });

}  // namespace
}  // namespace hgeval
