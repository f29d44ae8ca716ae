// Load: 64 concurrent clients, each with its own channel, sending mixed requests
// (loglikelihood, rolling, generate, tokenize) to one server. Every response must equal
// the single-client result for the same request, none may be lost, and the server's peak
// RSS must stay under the stated bound. The full-size run (64 x 200) is
// bench/server_load_bench.cc; this CI version sends 64 x kRequestsPerClient.
#include <signal.h>

#include <atomic>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/server/load_mix.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using testing::ServerProcess;
using testing::SourcePath;

constexpr int kClients = 64;
constexpr int kRequestsPerClient = 12;
// Peak resident set size allowed for the server (tiny model + gRPC + 64 connections).
constexpr int64_t kRssBoundKib = 512 * 1024;

TEST(LoadTest, SixtyFourClientsGetTheSingleClientResults) {
  const std::string dir = testing::MakeTempDir("load-e2e");
  ServerProcess server;
  ASSERT_TRUE(
      server
          .Start(dir, {"--model=hgrn2=" + SourcePath("tests/golden/hgrn2"),
                       "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
                       "--store=:memory:", "--preload=all", "--log=false", "--shutdown_grace_ms=0"})
          .ok());
  client::ClientOptions options;
  options.servers = {server.address()};
  auto single = *client::Client::Connect(options);
  ASSERT_TRUE(single->WaitServing(absl::Seconds(30)).ok());

  // Every request once from one client: the expected answers.
  std::vector<testing::LoadRequest> requests;
  for (int c = 0; c < kClients; ++c) {
    for (int i = 0; i < kRequestsPerClient; ++i) {
      requests.push_back(testing::MakeLoadRequest("hgrn2", c, i));
    }
  }
  std::vector<std::string> expected(requests.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    auto answer = testing::RunLoadRequest(*single, requests[r]);
    ASSERT_TRUE(answer.ok()) << answer.status();
    expected[r] = *answer;
  }

  std::atomic<int> mismatches{0}, failures{0}, answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto own = *client::Client::Connect(options);  // one channel per client
      for (int i = 0; i < kRequestsPerClient; ++i) {
        const size_t r = static_cast<size_t>(c * kRequestsPerClient + i);
        auto answer = testing::RunLoadRequest(*own, requests[r]);
        if (!answer.ok()) {
          ++failures;
          std::fprintf(stderr, "client %d request %d: %s\n", c, i,
                       answer.status().ToString().c_str());
          continue;
        }
        ++answered;
        if (*answer != expected[r]) ++mismatches;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(answered, kClients * kRequestsPerClient);
  const int64_t peak = server.PeakRssKib();
  std::printf("server peak RSS %lld KiB (bound %lld KiB)\n", static_cast<long long>(peak),
              static_cast<long long>(kRssBoundKib));
  EXPECT_GT(peak, 0);
  EXPECT_LT(peak, kRssBoundKib);
  server.Stop(SIGTERM);
}

}  // namespace
}  // namespace hgeval
