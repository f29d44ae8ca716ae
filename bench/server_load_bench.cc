// Server throughput with 1 client vs N concurrent clients (default 64 x 200 mixed
// requests: loglikelihood, rolling, generate, tokenize) against one hgeval-server process
// on loopback. Prints JSON: requests/s and tokens/s per phase, the server's scheduler
// counters and peak RSS. Client 0's answers under load must equal its answers alone.
//   server_load_bench [--clients=64] [--requests=200] [--model=PATH] [--tokenizer=PATH]
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "nlohmann/json.hpp"
#include "tests/server/load_mix.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

ABSL_FLAG(int, clients, 64, "Concurrent clients in the loaded phase.");
ABSL_FLAG(int, requests, 200, "Requests per client.");
ABSL_FLAG(std::string, model, "", "Model path (default: tests/golden/hgrn2).");
ABSL_FLAG(std::string, tokenizer, "", "Tokenizer (default: data/models/stories260K/tok512.bin).");
ABSL_FLAG(int, threads, 0, "Server CPU threads (0: all).");

namespace hgeval {
namespace {

struct Phase {
  double seconds = 0;
  int64_t requests = 0;
  int64_t tokens = 0;
  int64_t failures = 0;
};

nlohmann::json ToJson(const Phase& p) {
  return {{"seconds", p.seconds},
          {"requests", p.requests},
          {"tokens", p.tokens},
          {"failures", p.failures},
          {"requests_per_s", p.requests / p.seconds},
          {"tokens_per_s", p.tokens / p.seconds}};
}

int Main() {
  const int clients = absl::GetFlag(FLAGS_clients);
  const int per_client = absl::GetFlag(FLAGS_requests);
  std::string model = absl::GetFlag(FLAGS_model);
  if (model.empty()) model = testing::SourcePath("tests/golden/hgrn2");
  std::string tokenizer = absl::GetFlag(FLAGS_tokenizer);
  if (tokenizer.empty()) tokenizer = testing::SourcePath("data/models/stories260K/tok512.bin");
  const std::string dir = testing::MakeTempDir("server-load-bench");
  testing::ServerProcess server;
  if (absl::Status s = server.Start(
          dir, {"--model=m=" + model, "--tokenizer=" + tokenizer,
                "--store=:memory:", "--preload=all", "--log=false", "--shutdown_grace_ms=0",
                absl::StrCat("--threads=", absl::GetFlag(FLAGS_threads))});
      !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  client::ClientOptions options;
  options.servers = {server.address()};
  auto single = *client::Client::Connect(options);
  if (!single->WaitServing(absl::Seconds(60)).ok()) return 1;

  std::vector<std::vector<testing::LoadRequest>> requests(clients);
  for (int c = 0; c < clients; ++c) {
    for (int i = 0; i < per_client; ++i) requests[c].push_back(testing::MakeLoadRequest("m", c, i));
  }
  // Phase 1: one client, client 0's requests in order.
  Phase alone;
  std::vector<std::string> alone_answers;
  absl::Time start = absl::Now();
  for (const auto& r : requests[0]) {
    auto answer = testing::RunLoadRequest(*single, r);
    alone_answers.push_back(answer.ok() ? *answer : "");
    alone.failures += !answer.ok();
    alone.requests++;
    alone.tokens += r.tokens;
  }
  alone.seconds = absl::ToDoubleSeconds(absl::Now() - start);

  // Phase 2: all clients at once.
  Phase loaded;
  std::atomic<int64_t> done{0}, tokens{0}, failures{0}, mismatches{0};
  start = absl::Now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto own = *client::Client::Connect(options);
      for (int i = 0; i < per_client; ++i) {
        auto answer = testing::RunLoadRequest(*own, requests[c][i]);
        if (!answer.ok()) {
          ++failures;
          continue;
        }
        ++done;
        tokens += requests[c][i].tokens;
        if (c == 0 && *answer != alone_answers[i]) ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  loaded.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  loaded.requests = done;
  loaded.tokens = tokens;
  loaded.failures = failures;
  const int64_t peak_rss = server.PeakRssKib();
  server.Stop(SIGTERM);

  nlohmann::json out = {
      {"benchmark", "server_load"},
      {"model", model},
      {"clients", clients},
      {"requests_per_client", per_client},
      {"one_client", ToJson(alone)},
      {"many_clients", ToJson(loaded)},
      {"tokens_per_s_speedup", (loaded.tokens / loaded.seconds) / (alone.tokens / alone.seconds)},
      {"client0_mismatches_under_load", mismatches.load()},
      {"server_peak_rss_kib", peak_rss},
      {"hardware_threads", std::thread::hardware_concurrency()}};
  std::printf("%s\n", out.dump(2).c_str());
  return (loaded.failures == 0 && mismatches == 0) ? 0 : 1;
}

}  // namespace
}  // namespace hgeval

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return hgeval::Main();
}
