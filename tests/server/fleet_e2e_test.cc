// A fleet: a real PostgreSQL (Debian's postgresql package, started by the test in a temp
// dir on a loopback port) and three hgeval-servers sharing it as their result store. A
// multi-task job submitted to one is served by all three (each logs shard work); one is
// killed with SIGKILL mid-shard; its shard is taken over once its lease runs out and the
// job finishes on the other two. The results are bit-identical to a single server's run
// on SQLite, every server reports the same job, and the store shows no request computed
// twice. Skips with a message where PostgreSQL is not installed.
#include <signal.h>

#include <bit>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/store/result_store.h"
#include "tests/server/postgres_process.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using testing::PostgresProcess;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

constexpr int kServers = 3;
// Long enough that a busy machine (CI runs tests side by side) never starves a live
// server's renewals past it; short enough to keep the takeover quick.
constexpr int64_t kLeaseMs = 5000;

std::vector<std::string> Args(const std::string& store) {
  return {"--model=hgrn2=" + SourcePath("tests/golden/hgrn2"),
          "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
          "--data_dir=" + SourcePath("data"),
          "--store=" + store,
          "--threads=1",
          "--shutdown_grace_ms=0",
          absl::StrCat("--job_lease_ms=", kLeaseMs)};
}

v1::SubmitJobRequest FleetJob() {
  v1::SubmitJobRequest request;
  request.set_model("hgrn2");
  for (const char* task : {"hellaswag", "arc_easy", "openbookqa", "piqa"}) request.add_tasks(task);
  request.set_limit(250);
  // About 10 ranges of ~350 requests (3,500 in all): each lasts long enough on a loaded
  // machine for the tests to catch a server in the middle of one.
  request.mutable_options()->set_shard_requests(400);
  return request;
}

// Smaller than FleetJob (the test runs the reference too), still several seconds of work
// per server: the restart falls mid-job.
v1::SubmitJobRequest RestartJob() {
  v1::SubmitJobRequest request = FleetJob();
  request.set_limit(150);
  request.mutable_options()->set_shard_requests(300);
  return request;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

size_t CountOf(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// The results JSON without what differs between any two runs (wall-clock times, the
// date, per-run work counters).
nlohmann::json Comparable(const std::string& results_json) {
  nlohmann::json json = nlohmann::json::parse(results_json);
  for (const char* volatile_key :
       {"date", "total_evaluation_time_seconds", "hgeval", "hgeval_job"}) {
    json.erase(volatile_key);
  }
  return json;
}

void ExpectSameResults(const v1::Job& got, const v1::Job& reference) {
  ASSERT_EQ(got.results_size(), reference.results_size());
  for (int t = 0; t < reference.results_size(); ++t) {
    EXPECT_EQ(got.results(t).task(), reference.results(t).task());
    EXPECT_EQ(got.results(t).samples(), reference.results(t).samples());
    ASSERT_EQ(got.results(t).metrics_size(), reference.results(t).metrics_size());
    for (const auto& [name, value] : reference.results(t).metrics()) {
      ASSERT_TRUE(got.results(t).metrics().contains(name)) << name;
      // Bit-identical, not merely close.
      EXPECT_EQ(std::bit_cast<uint64_t>(got.results(t).metrics().at(name)),
                std::bit_cast<uint64_t>(value))
          << reference.results(t).task() << " " << name;
    }
  }
  EXPECT_EQ(Comparable(got.results_json()), Comparable(reference.results_json()));
  EXPECT_EQ(got.requests_total(), reference.requests_total());
}

TEST(FleetTest, ThreeServersShareAPostgresStoreAndSurviveAKilledServer) {
  if (PostgresProcess::FindBinDir().empty()) GTEST_SKIP() << PostgresProcess::kMissingMessage;
  const std::string dir = testing::MakeTempDir("fleet");
  const absl::Time start = absl::Now();

  // The reference: one server, SQLite.
  absl::StatusOr<v1::Job> reference_run =
      testing::RunJobOnNewServer(dir, Args(dir + "/reference.sqlite"), FleetJob());
  ASSERT_TRUE(reference_run.ok()) << reference_run.status();
  ASSERT_EQ(reference_run->state(), v1::JOB_STATE_SUCCEEDED) << reference_run->error();
  const v1::Job& reference = *reference_run;
  const absl::Duration reference_time = absl::Now() - start;

  PostgresProcess postgres;
  ASSERT_TRUE(postgres.Start(dir).ok());
  const std::string store = postgres.Uri();
  ServerProcess servers[kServers];
  for (int i = 0; i < kServers; ++i) {
    std::vector<std::string> args = Args(store);
    args.push_back(absl::StrCat("--replica=fleet-", i));
    ASSERT_TRUE(servers[i].Start(dir, args).ok());
  }
  std::unique_ptr<client::Client> clients[kServers];
  for (int i = 0; i < kServers; ++i) {
    clients[i] = testing::ConnectClient(servers[i].address());
    ASSERT_TRUE(clients[i]->WaitServing(absl::Seconds(30)).ok());
  }
  const absl::Time fleet_start = absl::Now();
  auto id = clients[0]->SubmitJob(FleetJob());
  ASSERT_TRUE(id.ok()) << id.status();

  // Kill fleet-2 once every server is working and fleet-2's shard has stored progress.
  auto shards_store = server::ResultStore::Open(store);
  ASSERT_TRUE(shards_store.ok()) << shards_store.status();
  int killed_shard = -1;
  int64_t done_at_kill = 0;
  while (killed_shard < 0) {
    ASSERT_LT(absl::Now() - fleet_start, absl::Seconds(120)) << "fleet-2 never got to work";
    auto shards = (*shards_store)->JobShards(*id);
    ASSERT_TRUE(shards.ok()) << shards.status();
    bool all_working = true;
    for (int i = 0; i < kServers; ++i) {
      all_working = all_working && ReadFile(servers[i].log_path()).find("event=shard_started") !=
                                       std::string::npos;
    }
    bool all_done = true;
    for (const server::JobShard& shard : *shards) {
      all_done = all_done && shard.state == server::kShardDone;
      if (all_working && shard.owner == "fleet-2" && shard.state == server::kShardRunning &&
          shard.requests_done > 0) {
        killed_shard = shard.index;
        done_at_kill = shard.requests_done;
      }
    }
    ASSERT_FALSE(all_done) << "the job finished before the kill";
    if (killed_shard < 0) absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(servers[2].Stop(SIGKILL), -SIGKILL);
  const absl::Time killed_at = absl::Now();

  auto job = clients[0]->WatchJob(*id, nullptr, absl::Seconds(120));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->error();
  const absl::Duration fleet_time = absl::Now() - fleet_start;
  ExpectSameResults(*job, reference);
  // Read from another replica: the same job.
  auto from_other = clients[1]->GetJob(*id);
  ASSERT_TRUE(from_other.ok()) << from_other.status();
  EXPECT_EQ(from_other->results_json(), job->results_json());
  EXPECT_EQ(from_other->state(), v1::JOB_STATE_SUCCEEDED);

  // The killed server's shard was taken over (a second attempt by a live server), and
  // what it had stored was answered from the store rather than computed again.
  auto shards = (*shards_store)->JobShards(*id);
  ASSERT_TRUE(shards.ok());
  const server::JobShard& taken = (*shards)[killed_shard];
  EXPECT_EQ(taken.state, server::kShardDone);
  EXPECT_EQ(taken.attempts, 2);
  EXPECT_NE(taken.owner, "fleet-2");
  // A shard's progress counts stored results only, so all it had done is kept.
  EXPECT_GT(job->requests_cached(), 0);
  EXPECT_GE(job->requests_cached(), done_at_kill);
  // Every server logged work; the survivors finished shards.
  for (int i = 0; i < kServers; ++i) {
    const std::string log = ReadFile(servers[i].log_path());
    EXPECT_NE(log.find("event=shard_started"), std::string::npos) << "fleet-" << i;
    if (i < 2) EXPECT_NE(log.find("event=shard_finished"), std::string::npos) << "fleet-" << i;
  }
  const bool taken_over_logged =
      ReadFile(servers[0].log_path()).find("attempt=2") != std::string::npos ||
      ReadFile(servers[1].log_path()).find("attempt=2") != std::string::npos;
  EXPECT_TRUE(taken_over_logged) << "no survivor logged the taken-over shard";

  // The CLI on the survivors as one round_robin channel (`--server A,B`): the same job again
  // is answered from the shared store, whichever replica takes the submit and the watch.
  std::string cli_out;
  const std::string cli_results = dir + "/cli-results.json";
  EXPECT_EQ(testing::RunCommand({testing::ClientBinary(), "run",
                                 "--server=" + servers[0].address() + "," + servers[1].address(),
                                 "--model=hgrn2", "--tasks=hellaswag,arc_easy,openbookqa,piqa",
                                 "--limit=250", "--progress=false", "--output=" + cli_results},
                                &cli_out),
            0)
      << cli_out;
  EXPECT_NE(cli_out.find("JOB_STATE_SUCCEEDED"), std::string::npos) << cli_out;
  const std::string cli_json = ReadFile(cli_results);
  ASSERT_FALSE(cli_json.empty());
  EXPECT_EQ(Comparable(cli_json), Comparable(reference.results_json()));
  EXPECT_EQ(nlohmann::json::parse(cli_json)["hgeval_job"]["requests_computed"], 0);

  // `--local` over the same list: each Loglikelihood call is split into parts sent to the
  // listed servers in turn, so both log calls (under round_robin alone, parts sent before
  // the second connection was up all went to the first: a loaded CI machine missed a
  // replica), and the numbers equal the job's.
  const std::string local_results = dir + "/local-results.json";
  size_t calls_before[2];
  for (int i = 0; i < 2; ++i) {
    calls_before[i] = CountOf(ReadFile(servers[i].log_path()), "event=loglikelihood");
  }
  EXPECT_EQ(testing::RunCommand(
                {testing::ClientBinary(), "run", "--local",
                 "--server=" + servers[0].address() + "," + servers[1].address(), "--model=hgrn2",
                 "--tasks=piqa,openbookqa", "--limit=40", "--data_dir=" + SourcePath("data"),
                 "--progress=false", "--output=" + local_results},
                &cli_out),
            0)
      << cli_out;
  for (int i = 0; i < 2; ++i) {
    EXPECT_GT(CountOf(ReadFile(servers[i].log_path()), "event=loglikelihood"), calls_before[i])
        << "fleet-" << i << " got no Loglikelihood call";
  }
  EXPECT_FALSE(ReadFile(local_results).empty());

  // No request computed twice, and the store holds exactly the reference run's requests.
  auto stats = (*shards_store)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->max_compute_count, 1);
  EXPECT_EQ(stats->computations, stats->results);
  auto reference_store = server::ResultStore::Open(dir + "/reference.sqlite");
  ASSERT_TRUE(reference_store.ok());
  EXPECT_EQ(stats->results, (*reference_store)->Stats()->results);

  // One task alone spreads over the servers: its doc ranges are claimed by both survivors,
  // still with no request computed twice.
  v1::SubmitJobRequest single;
  single.set_model("hgrn2");
  single.add_tasks("winogrande");
  single.set_limit(400);
  auto single_id = clients[0]->SubmitJob(single);
  ASSERT_TRUE(single_id.ok()) << single_id.status();
  auto single_job = clients[1]->WatchJob(*single_id, nullptr, absl::Seconds(120));
  ASSERT_TRUE(single_job.ok()) << single_job.status();
  ASSERT_EQ(single_job->state(), v1::JOB_STATE_SUCCEEDED) << single_job->error();
  ASSERT_EQ(single_job->results_size(), 1);
  EXPECT_EQ(single_job->results(0).task(), "winogrande");
  EXPECT_EQ(single_job->requests_total(), 800);
  auto single_shards = (*shards_store)->JobShards(*single_id);
  ASSERT_TRUE(single_shards.ok()) << single_shards.status();
  EXPECT_GT(single_shards->size(), 2u);
  std::set<std::string> owners;
  for (const server::JobShard& shard : *single_shards) {
    EXPECT_EQ(shard.state, server::kShardDone);
    if (shard.requests_total > 0) owners.insert(shard.owner);
  }
  EXPECT_EQ(owners, (std::set<std::string>{"fleet-0", "fleet-1"}));
  auto single_stats = (*shards_store)->Stats();
  ASSERT_TRUE(single_stats.ok());
  EXPECT_EQ(single_stats->max_compute_count, 1);
  EXPECT_EQ(single_stats->results, stats->results + 800);
  std::printf(
      "fleet: %lld requests (%lld cached), shard %d killed at %lld done, job finished %.1f s "
      "after the kill; single server %.1f s, fleet %.1f s\n",
      static_cast<long long>(job->requests_total()), static_cast<long long>(job->requests_cached()),
      killed_shard, static_cast<long long>(done_at_kill),
      absl::ToDoubleSeconds(absl::Now() - killed_at), absl::ToDoubleSeconds(reference_time),
      absl::ToDoubleSeconds(fleet_time));
  for (int i = 0; i < 2; ++i) servers[i].Stop(SIGTERM);
}

// The shared PostgreSQL stopped (fast shutdown: every session ended) and started again on
// the same data directory and port while a job is mid-run: the servers reconnect with
// backoff (logging it), nothing fails, and the job ends bit-identical to one SQLite server
// with no request computed twice.
TEST(FleetTest, ServersRideOutAPostgresRestartMidJob) {
  if (PostgresProcess::FindBinDir().empty()) GTEST_SKIP() << PostgresProcess::kMissingMessage;
  constexpr int kRestartServers = 2;
  const std::string dir = testing::MakeTempDir("fleet-restart");
  absl::StatusOr<v1::Job> reference =
      testing::RunJobOnNewServer(dir, Args(dir + "/reference.sqlite"), RestartJob());
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(reference->state(), v1::JOB_STATE_SUCCEEDED) << reference->error();

  PostgresProcess postgres;
  ASSERT_TRUE(postgres.Start(dir).ok());
  ServerProcess servers[kRestartServers];
  for (int i = 0; i < kRestartServers; ++i) {
    std::vector<std::string> args = Args(postgres.Uri());
    args.push_back(absl::StrCat("--replica=restart-", i));
    // Longer than the outage plus the reconnect backoff even on a loaded machine: the
    // leases survive it (a lease that does run out is taken over, as for a killed server).
    args.push_back("--job_lease_ms=20000");
    ASSERT_TRUE(servers[i].Start(dir, args).ok());
  }
  auto client = testing::ConnectClient(servers[0].address());
  ASSERT_TRUE(client->WaitServing(absl::Seconds(30)).ok());
  ASSERT_TRUE(testing::ConnectClient(servers[1].address())->WaitServing(absl::Seconds(30)).ok());
  auto id = client->SubmitJob(RestartJob());
  ASSERT_TRUE(id.ok()) << id.status();

  // Restart once both servers hold a shard with stored progress (an idle server polls
  // the store for shards, so it meets the outage too).
  int64_t done_before = 0;
  {
    auto watcher = server::ResultStore::Open(postgres.Uri());
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    const absl::Time start = absl::Now();
    for (;;) {
      ASSERT_LT(absl::Now() - start, absl::Seconds(120)) << "the servers never got to work";
      auto shards = (*watcher)->JobShards(*id);
      ASSERT_TRUE(shards.ok()) << shards.status();
      int working = 0, running = 0;
      bool all_done = true;
      done_before = 0;
      for (const server::JobShard& shard : *shards) {
        all_done = all_done && shard.state == server::kShardDone;
        if (shard.state == server::kShardRunning) ++running;
        if (shard.state == server::kShardRunning && shard.requests_done > 0) ++working;
        done_before += shard.requests_done;
      }
      ASSERT_FALSE(all_done) << "the job finished before the restart";
      // Both servers at work; on a loaded machine one may still be starting: then one. On
      // an idle machine a shard can end before its progress is ever seen mid-run: then
      // the job is mid-run as soon as some progress is stored and both servers hold a
      // shard (or one, after a second).
      const bool mid_job = done_before > 0 && running > 0;
      if (working == kRestartServers || (working > 0 && absl::Now() - start > absl::Seconds(5)) ||
          (mid_job && (running >= kRestartServers || absl::Now() - start > absl::Seconds(1)))) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  ASSERT_TRUE(postgres.StopFast().ok());
  // Down long enough that the servers' writes and lease renewals fail and back off.
  absl::SleepFor(absl::Seconds(2));
  ASSERT_TRUE(postgres.Resume().ok());

  auto job = client->WatchJob(*id, nullptr, absl::Seconds(180));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state(), v1::JOB_STATE_SUCCEEDED) << job->error();
  ExpectSameResults(*job, *reference);
  for (int i = 0; i < kRestartServers; ++i) {
    // A server idle when the job ends meets the restarted store at its next poll of the
    // store (every 500 ms), which may come after the job's end: wait for it (bounded),
    // rather than race the read of its log against that poll.
    std::string log;
    const absl::Time deadline = absl::Now() + absl::Seconds(15);
    for (;;) {
      log = ReadFile(servers[i].log_path());
      if (log.find("event=store_reconnected") != std::string::npos || absl::Now() > deadline) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    EXPECT_NE(log.find("event=store_reconnected"), std::string::npos) << "restart-" << i;
    EXPECT_EQ(log.find("event=store_unavailable"), std::string::npos) << "restart-" << i;
  }
  auto store = server::ResultStore::Open(postgres.Uri());
  ASSERT_TRUE(store.ok()) << store.status();
  auto stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->max_compute_count, 1);
  EXPECT_EQ(stats->computations, stats->results);
  auto reference_store = server::ResultStore::Open(dir + "/reference.sqlite");
  ASSERT_TRUE(reference_store.ok());
  EXPECT_EQ(stats->results, (*reference_store)->Stats()->results);
  std::printf("restart: %lld requests, %lld done before the restart, %lld cached\n",
              static_cast<long long>(job->requests_total()), static_cast<long long>(done_before),
              static_cast<long long>(job->requests_cached()));
  for (int i = 0; i < kRestartServers; ++i) EXPECT_EQ(servers[i].Stop(SIGTERM), 0);
}

}  // namespace
}  // namespace hgeval
