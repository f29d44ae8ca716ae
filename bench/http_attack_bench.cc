// The attacks of issue 29 replayed against one hgeval-server's HTTP door on loopback (the
// golden HGRN2 model, a bearer token): a 1 GiB gzip bomb with and without the token, a
// 1 GiB chunked body, --slow_connections slowloris connections kept open for --seconds
// while --clients correct clients call /tokenize, and 8 amplifying completions at once
// (384 x 256 ids, echo, logprobs=100). Prints JSON: each phase's statuses and seconds,
// the share of correct calls answered within 1 s, the server's peak RSS. Exit status 1
// unless the peak RSS stays under 1 GiB and >= 95% of correct calls answer within 1 s.
//   http_attack_bench [--seconds=20] [--slow_connections=200] [--clients=20]
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "nlohmann/json.hpp"
#include "tests/server/raw_http.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

ABSL_FLAG(int, seconds, 20, "How long the slowloris connections are kept open.");
ABSL_FLAG(int, slow_connections, 200, "Slowloris connections kept open.");
ABSL_FLAG(int, clients, 20, "Correct clients calling during the slowloris phase.");
ABSL_FLAG(std::string, attacker_address, "127.0.0.2",
          "Loopback address the slowloris connections come from (127.0.0.1: the correct "
          "clients' own).");

namespace hgeval {
namespace {

using Json = nlohmann::json;
using testing::ConnectLoopback;
using testing::PostHead;
using testing::ReadStatus;
using testing::SendAll;

constexpr int64_t kMiB = 1 << 20;
constexpr char kToken[] = "s3cret";

int Main() {
  const std::string dir = testing::MakeTempDir("http-attack-bench");
  std::ofstream(dir + "/token") << kToken << "\n";
  testing::ServerProcess server;
  std::vector<std::string> args = testing::GoldenServerArgs(dir);
  args.insert(args.end(), {"--preload=all", "--http_listen=127.0.0.1:0",
                           "--http_port_file=" + dir + "/http-port", "--shutdown_grace_ms=0",
                           "--log=false", "--auth_token_file=" + dir + "/token"});
  if (absl::Status s = server.Start(dir, args); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  int port = 0;
  std::ifstream(dir + "/http-port") >> port;
  client::ClientOptions options;
  options.servers = {server.address()};
  options.token = kToken;
  if (!(*client::Client::Connect(options))->WaitServing(absl::Seconds(60)).ok()) return 1;
  const std::string auth = absl::StrCat("Authorization: Bearer ", kToken);
  const int64_t rss_start = server.RssKib();
  Json out = {{"benchmark", "http_attack"}, {"server_rss_kib_at_start", rss_start}};

  // 1. 1 GiB gzip bomb, without and with the token.
  const std::string bomb = testing::GzipBomb(1024 * kMiB);
  for (const bool authenticated : {false, true}) {
    const int fd = ConnectLoopback(port);
    std::vector<std::string> headers = {"Content-Type: application/json", "Content-Encoding: gzip",
                                        absl::StrCat("Content-Length: ", bomb.size())};
    if (authenticated) headers.push_back(auth);
    const absl::Time start = absl::Now();
    SendAll(fd, PostHead("/v1/completions", headers));
    SendAll(fd, bomb);
    const int status = ReadStatus(fd);
    close(fd);
    out[authenticated ? "gzip_bomb_1gib" : "gzip_bomb_1gib_unauthenticated"] = {
        {"wire_bytes", bomb.size()},
        {"status", status},
        {"seconds", absl::ToDoubleSeconds(absl::Now() - start)}};
  }

  // 2. 1 GiB chunked body with the token.
  {
    const int fd = ConnectLoopback(port);
    const absl::Time start = absl::Now();
    SendAll(fd, PostHead("/v1/completions",
                         {"Content-Type: application/json", "Transfer-Encoding: chunked", auth}));
    int64_t sent = 0;
    const int status = testing::SendChunked(fd, 16384, 64 << 10, &sent);
    close(fd);
    out["chunked_1gib"] = {{"status", status},
                           {"bytes_sent_before_the_server_stopped_reading", sent},
                           {"seconds", absl::ToDoubleSeconds(absl::Now() - start)}};
  }

  // 3. Slowloris beside correct clients: the attacker keeps its connections at the count,
  //    one header line each every 500 ms, reconnecting those the server closed.
  {
    const int target = absl::GetFlag(FLAGS_slow_connections);
    const std::string attacker = absl::GetFlag(FLAGS_attacker_address);
    const absl::Time end = absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_seconds));
    std::atomic<int64_t> reconnects{0};
    std::thread slowloris([&] {
      std::vector<int> fds;
      while (absl::Now() < end) {
        std::vector<int> open;
        for (int fd : fds) {
          if (send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT) > 0) {
            open.push_back(fd);
          } else {
            close(fd);
          }
        }
        const size_t missing = target - std::min<size_t>(target, open.size());
        std::vector<int> fresh =
            testing::SlowHeads(port, static_cast<int>(missing), attacker.c_str());
        reconnects += static_cast<int64_t>(fresh.size());
        open.insert(open.end(), fresh.begin(), fresh.end());
        fds = std::move(open);
        absl::SleepFor(absl::Milliseconds(500));
      }
      for (int fd : fds) close(fd);
    });
    absl::SleepFor(absl::Milliseconds(500));  // the attack is in place first
    std::mutex mutex;
    std::vector<double> latencies;
    int64_t failed = 0;
    std::vector<std::thread> clients;
    for (int c = 0; c < absl::GetFlag(FLAGS_clients); ++c) {
      clients.emplace_back([&] {
        const std::string body = R"({"prompt": "Once upon a time"})";
        const std::string request =
            PostHead("/tokenize", {"Content-Type: application/json", auth,
                                   absl::StrCat("Content-Length: ", body.size())}) +
            body;
        while (absl::Now() < end) {
          const absl::Time sent = absl::Now();
          const int fd = ConnectLoopback(port);
          const bool ok = fd >= 0 && SendAll(fd, request) && ReadStatus(fd) == 200;
          if (fd >= 0) close(fd);
          {
            std::lock_guard<std::mutex> lock(mutex);
            if (ok) {
              latencies.push_back(absl::ToDoubleSeconds(absl::Now() - sent));
            } else {
              ++failed;
            }
          }
          absl::SleepFor(absl::Milliseconds(100));
        }
      });
    }
    for (std::thread& t : clients) t.join();
    slowloris.join();
    std::sort(latencies.begin(), latencies.end());
    const int64_t calls = static_cast<int64_t>(latencies.size()) + failed;
    const int64_t within_1s =
        std::lower_bound(latencies.begin(), latencies.end(), 1.0) - latencies.begin();
    out["slowloris"] = {
        {"slow_connections", target},
        {"attacker_address", attacker},
        {"slow_connections_opened", reconnects.load()},
        {"seconds", absl::GetFlag(FLAGS_seconds)},
        {"correct_clients", absl::GetFlag(FLAGS_clients)},
        {"correct_calls", calls},
        {"failed", failed},
        {"answered_within_1s", within_1s},
        {"share_within_1s", calls > 0 ? static_cast<double>(within_1s) / calls : 0.0},
        {"median_ms", latencies.empty() ? 0.0 : 1000 * latencies[latencies.size() / 2]},
        {"max_ms", latencies.empty() ? 0.0 : 1000 * latencies.back()}};
  }

  // 4. 8 amplifying completions at once.
  {
    const std::string body = testing::AmplifyingCompletionBody("hgrn2", 384, 256);
    std::vector<int> statuses(8);
    const absl::Time start = absl::Now();
    std::vector<std::thread> senders;
    for (int i = 0; i < 8; ++i) {
      senders.emplace_back([&, i] {
        const int fd = ConnectLoopback(port);
        SendAll(fd, PostHead("/v1/completions", {"Content-Type: application/json", auth,
                                                 absl::StrCat("Content-Length: ", body.size())}) +
                        body);
        statuses[i] = ReadStatus(fd);
        close(fd);
      });
    }
    for (std::thread& t : senders) t.join();
    out["amplifying_x8"] = {{"body_bytes", body.size()},
                            {"statuses", statuses},
                            {"seconds", absl::ToDoubleSeconds(absl::Now() - start)}};
  }

  const int64_t peak = server.PeakRssKib();
  out["server_peak_rss_kib"] = peak;
  out["server_still_serving"] = server.running() && kill(server.pid(), 0) == 0;
  const bool rss_ok = peak < 1024 * 1024;
  const bool latency_ok = out["slowloris"]["share_within_1s"].get<double>() >= 0.95;
  out["acceptance"] = {{"peak_rss_under_1gib", rss_ok},
                       {"correct_calls_95pct_within_1s", latency_ok}};
  out["hardware_threads"] = std::thread::hardware_concurrency();
  server.Stop(SIGTERM);
  std::printf("%s\n", out.dump(2).c_str());
  return rss_ok && latency_ok ? 0 : 1;
}

}  // namespace
}  // namespace hgeval

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return hgeval::Main();
}
