// `hgeval sweep` (client/sweep.h) on real servers: a series of three checkpoints, one
// SubmitSeries, whose server is killed with SIGKILL during the second checkpoint's job (timed
// by that job's own progress) and
// restarted on the same store and port. The server resumes the series' jobs, the sweep
// rides through, no request is computed twice and the points equal an uninterrupted
// sweep's; the series' record survives further restarts; a re-run (a new series over the
// same checkpoints) recomputes 0 results, submitting the same series again submits
// nothing, an extended series computes only its new checkpoint, and the outputs (JSON with
// fits, CSV, table, PNG plots) are written.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "client/sweep.h"
#include "gtest/gtest.h"
#include "server/store/result_store.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using client::SweepOptions;
using client::SweepResult;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;
namespace fs = std::filesystem;

constexpr int64_t kKillAfter = 60;  // requests of the second checkpoint done before the kill

std::vector<std::string> Args(const std::string& store) {
  std::vector<std::string> args = {
      "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
      "--data_dir=" + SourcePath("data"), "--store=" + store, "--shutdown_grace_ms=0",
      "--threads=1"};
  std::vector<std::string> models;
  for (const char* m : {"llama", "hgrn2", "gla", "mamba"}) {
    models.push_back(absl::StrCat(m, "=", SourcePath(absl::StrCat("tests/golden/", m))));
  }
  args.push_back("--model=" + absl::StrJoin(models, ","));
  return args;
}

// Three checkpoints (four when extended) with made-up N and D: one architecture, so the
// fits run over all of them.
SweepOptions Options(const std::string& dir, bool extended, const std::string& name = "golden") {
  SweepOptions o;
  o.name = name;
  const char* models[] = {"llama", "hgrn2", "gla", "mamba"};
  for (int i = 0; i < (extended ? 4 : 3); ++i) {
    o.checkpoints.push_back({.model = models[i],
                             .architecture = "golden",
                             .parameters = 1e5 * (1 << i),
                             .tokens = 1e6 * (1 << i)});
    o.checkpoints.back().compute =
        6 * o.checkpoints.back().parameters * o.checkpoints.back().tokens;
  }
  o.tasks = {"pd_english_heldout", "arc_easy"};
  o.limit = 150;  // 6 held-out documents and 150 arc_easy questions (600 requests)
  o.output_dir = dir;
  // One shard per task: the kill below falls inside the second checkpoint's arc_easy
  // shard, whose stored requests its rerun must answer from the store.
  o.job_options.set_shard_requests(100000);
  o.fit.bootstrap_iterations = 200;
  return o;
}

absl::StatusOr<v1::Job> Watch(client::Client& c, const std::string& id) {
  return c.WatchJob(id, nullptr, absl::Seconds(60));
}

server::StoreStats Stats(const std::string& store) {
  auto s = server::ResultStore::Open(store);
  EXPECT_TRUE(s.ok()) << s.status();
  auto stats = (*s)->Stats();
  EXPECT_TRUE(stats.ok()) << stats.status();
  return *stats;
}

void ExpectSamePoints(const SweepResult& got, const SweepResult& want) {
  ASSERT_EQ(got.points.size(), want.points.size());
  for (size_t i = 0; i < want.points.size(); ++i) {
    EXPECT_EQ(got.points[i].checkpoint.model, want.points[i].checkpoint.model);
    EXPECT_EQ(got.points[i].model_hash, want.points[i].model_hash);
    EXPECT_EQ(got.points[i].metrics, want.points[i].metrics) << want.points[i].checkpoint.model;
    EXPECT_EQ(got.points[i].requests, want.points[i].requests);
  }
}

TEST(SeriesSweep, SurvivesAKilledServerRecomputesNothingOnRerunAndOnlyTheNewOnExtension) {
  const std::string dir = testing::MakeTempDir("series-sweep");
  const auto any_job = [](client::Client& c, const std::string& id, int, int, const std::string&) {
    return Watch(c, id);
  };

  // Uninterrupted reference sweep.
  SweepResult reference;
  {
    ServerProcess server;
    ASSERT_TRUE(server.Start(dir, Args(dir + "/reference.sqlite")).ok());
    auto c = testing::ConnectClient(server.address());
    ASSERT_TRUE(c->WaitServing(absl::Seconds(30)).ok());
    absl::StatusOr<SweepResult> r =
        client::RunSweep(*c, Options(dir + "/reference", false), any_job);
    ASSERT_TRUE(r.ok()) << r.status();
    reference = *std::move(r);
    server.Stop(SIGTERM);
  }
  ASSERT_EQ(reference.points.size(), 3u);
  for (const auto& p : reference.points) {
    EXPECT_EQ(p.model_hash.size(), 32u);
    // 6 rolling documents + 150 questions' choices, the same for every checkpoint.
    EXPECT_GT(p.requests, 600);
    EXPECT_EQ(p.requests, reference.points[0].requests);
    EXPECT_TRUE(p.metrics.count("pd_english_heldout/bits_per_byte"));
    EXPECT_TRUE(p.metrics.count("arc_easy/acc"));
  }

  // The same sweep on a fresh store, its server killed during the second checkpoint.
  const std::string store = dir + "/sweep.sqlite";
  auto server = std::make_unique<ServerProcess>();
  ASSERT_TRUE(server->Start(dir, Args(store)).ok());
  const std::string address = server->address();
  auto c = testing::ConnectClient(address);
  ASSERT_TRUE(c->WaitServing(absl::Seconds(30)).ok());
  int64_t stored_at_kill = 0;
  bool killed = false;
  // The server runs the series' jobs back to back whatever the client does, so the kill
  // is timed by the second checkpoint's job itself: while the first is watched, its
  // progress is polled until it has done kKillAfter requests.
  const auto kill_in_second = [&](client::Client& client, const std::string& id, int index, int,
                                  const std::string&) -> absl::StatusOr<v1::Job> {
    if (index == 0) {
      for (;;) {
        auto listed = client.ListJobs(10);
        if (!listed.ok()) return listed.status();
        const v1::Job* second = nullptr;
        for (const v1::Job& job : listed->jobs()) {
          if (job.model() == "hgrn2") second = &job;
        }
        if (second != nullptr) {
          EXPECT_NE(second->state(), v1::JOB_STATE_SUCCEEDED) << "finished before the kill";
          if (second->requests_done() >= kKillAfter || second->state() == v1::JOB_STATE_SUCCEEDED) {
            break;
          }
        }
        absl::SleepFor(absl::Milliseconds(10));
      }
      EXPECT_EQ(server->Stop(SIGKILL), -SIGKILL);
      killed = true;
      stored_at_kill = Stats(store).results;
      server = std::make_unique<ServerProcess>();
      const std::string port = address.substr(address.rfind(':') + 1);
      absl::Status started =
          server->Start(dir, Args(store), absl::Seconds(30), "127.0.0.1:" + port);
      if (!started.ok()) return started;
    }
    return Watch(client, id);
  };
  absl::StatusOr<SweepResult> crashed =
      client::RunSweep(*c, Options(dir + "/crash", false), kill_in_second);
  ASSERT_TRUE(crashed.ok()) << crashed.status();
  ASSERT_TRUE(killed);
  // The first checkpoint's results were stored before the kill; what the second had
  // stored was answered from the store after it.
  EXPECT_GT(stored_at_kill, reference.points[0].requests);
  ExpectSamePoints(*crashed, reference);
  server::StoreStats stats = Stats(store);
  EXPECT_EQ(stats.max_compute_count, 1);
  EXPECT_EQ(stats.computations, stats.results);
  EXPECT_EQ(stats.results, Stats(dir + "/reference.sqlite").results);
  EXPECT_GT(crashed->points[1].requests_cached, 0);

  // The series is the server's: killed and restarted again, it still lists the three
  // points, their jobs finished, with the metrics the sweep reported.
  EXPECT_EQ(server->Stop(SIGKILL), -SIGKILL);
  server = std::make_unique<ServerProcess>();
  ASSERT_TRUE(server
                  ->Start(dir, Args(store), absl::Seconds(30),
                          "127.0.0.1:" + address.substr(address.rfind(':') + 1))
                  .ok());
  ASSERT_TRUE(c->WaitServing(absl::Seconds(30)).ok());
  {
    absl::StatusOr<v1::Series> kept = c->GetSeries(crashed->series_id);
    ASSERT_TRUE(kept.ok()) << kept.status();
    EXPECT_EQ(kept->name(), "golden");
    EXPECT_EQ(kept->points_done(), 3);
    ASSERT_EQ(kept->points_size(), 3);
    for (int i = 0; i < 3; ++i) {
      const v1::SeriesPoint& p = kept->points(i);
      EXPECT_EQ(p.checkpoint().model(), reference.points[i].checkpoint.model);
      EXPECT_EQ(p.checkpoint().compute(), reference.points[i].checkpoint.compute);
      EXPECT_EQ(p.state(), v1::JOB_STATE_SUCCEEDED);
      const std::map<std::string, double> metrics(p.metrics().begin(), p.metrics().end());
      EXPECT_EQ(metrics, reference.points[i].metrics);
    }
  }
  EXPECT_EQ(c->GetSeries("series-0000000000000000").status().code(), absl::StatusCode::kNotFound);
  {
    v1::SubmitSeriesRequest bad;
    bad.set_name("bad");
    bad.add_tasks("arc_easy");
    EXPECT_EQ(c->SubmitSeries(bad).status().code(), absl::StatusCode::kInvalidArgument);
    bad.add_checkpoints()->set_model("llama");
    bad.add_checkpoints()->set_model("llama");
    EXPECT_EQ(c->SubmitSeries(bad).status().code(), absl::StatusCode::kInvalidArgument);
    bad.mutable_checkpoints(1)->set_model("no_such_model");
    EXPECT_EQ(c->SubmitSeries(bad).status().code(), absl::StatusCode::kNotFound);
  }

  // A re-run as a new series over the same checkpoints (new jobs): all from the store.
  absl::StatusOr<SweepResult> rerun =
      client::RunSweep(*c, Options(dir + "/rerun", false, "rerun"), any_job);
  ASSERT_TRUE(rerun.ok()) << rerun.status();
  ExpectSamePoints(*rerun, reference);
  // The store computed nothing more; every request of every job was answered from it
  // (requests_cached counts rolling windows one by one, requests documents).
  EXPECT_EQ(Stats(store).computations, stats.computations);
  for (const auto& p : rerun->points) {
    EXPECT_GE(p.requests_cached, p.requests) << p.checkpoint.model;
  }

  // The same series again: its finished jobs are read back, none submitted.
  absl::StatusOr<SweepResult> resumed =
      client::RunSweep(*c, Options(dir + "/rerun", false, "rerun"), any_job);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  for (size_t i = 0; i < resumed->points.size(); ++i) {
    EXPECT_EQ(resumed->points[i].job_id, rerun->points[i].job_id);
  }

  // The series extended by a fourth checkpoint: only its requests are computed.
  absl::StatusOr<SweepResult> extended =
      client::RunSweep(*c, Options(dir + "/rerun", true, "rerun"), any_job);
  ASSERT_TRUE(extended.ok()) << extended.status();
  EXPECT_EQ(extended->series_id, rerun->series_id);
  ASSERT_EQ(extended->points.size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(extended->points[i].job_id, rerun->points[i].job_id);
  EXPECT_EQ(extended->points[3].requests_cached, 0);
  server::StoreStats after = Stats(store);
  EXPECT_GE(after.computations - stats.computations, extended->points[3].requests);
  EXPECT_EQ(after.computations, after.results);
  EXPECT_EQ(after.max_compute_count, 1);

  // The outputs: fits over the four points, CSV rows, the table, both plots.
  const nlohmann::json& report = extended->report;
  // The default fitted metric: the first task's first metric.
  EXPECT_EQ(report["fit_metric"], "pd_english_heldout/word_perplexity");
  const nlohmann::json& fit = report["fits"]["golden"]["loss_vs_compute"];
  ASSERT_TRUE(fit.contains("b")) << fit.dump();
  EXPECT_EQ(fit["points"], 4);
  EXPECT_LE(fit["interval"]["b"][0].get<double>(), fit["b"].get<double>());
  EXPECT_GE(fit["interval"]["b"][1].get<double>(), fit["b"].get<double>());
  std::ifstream csv(dir + "/rerun/" + client::kSeriesPointsCsv);
  std::stringstream csv_stream;
  csv_stream << csv.rdbuf();
  const std::string csv_text = csv_stream.str();
  EXPECT_EQ(std::count(csv_text.begin(), csv_text.end(), '\n'), 5);
  for (const char* file : {client::kSeriesResultsJson, client::kSeriesTableMd,
                           client::kSeriesComputePng, client::kSeriesParametersPng}) {
    EXPECT_GT(fs::file_size(dir + "/rerun/" + file), 100u) << file;
  }
  server->Stop(SIGTERM);
}

}  // namespace
}  // namespace hgeval
