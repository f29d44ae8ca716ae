// End to end (issue "Bounded memory"): hgeval-server shares one memory budget across
// requests. With --host_memory just above a LLaMA's weights, a pair whose KV cache cannot
// fit even alone gets RESOURCE_EXHAUSTED naming the bytes it needs and the budget, and the
// server goes on serving the requests that fit; a malformed --host_memory is refused at
// start.
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "engine/model/load_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/server_process.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;
using testing::SourcePath;
namespace v1 = ::hgeval::v1;

v1::LoglikelihoodRequest PairOfLength(int context_tokens) {
  v1::LoglikelihoodRequest request;
  request.set_model("llama");
  request.set_no_cache(true);
  v1::LoglikelihoodPair* pair = request.add_pairs();
  for (int t = 0; t < context_tokens; ++t) pair->add_context_ids(3 + (t * 13) % 500);
  pair->add_continuation_ids(5);
  return request;
}

TEST(MemoryBudgetE2eTest, RequestLargerThanTheBudgetIsRefusedAndTheServerKeepsServing) {
  // The budget: the model's weights plus KV caches of 40 positions.
  auto model = LoadModel(SourcePath("tests/golden/llama"), LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status();
  const size_t weights = static_cast<size_t>((*model)->info().num_parameters) * sizeof(float);
  const size_t budget = weights + (*model)->StateBytes(40);
  const std::string dir = testing::MakeTempDir("memory-budget");
  ServerProcess server;
  ASSERT_TRUE(server
                  .Start(dir, {"--model=llama=" + SourcePath("tests/golden/llama"),
                               "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
                               "--store=" + dir + "/store.sqlite", "--threads=1", "--preload=all",
                               absl::StrCat("--host_memory=", budget)})
                  .ok());
  client::ClientOptions options;
  options.servers = {server.address()};
  auto client = client::Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->WaitServing(absl::Seconds(30)).ok());

  auto small = (*client)->Loglikelihood(PairOfLength(20));
  ASSERT_TRUE(small.ok()) << small.status();
  absl::StatusOr<v1::LoglikelihoodResponse> large = (*client)->Loglikelihood(PairOfLength(200));
  ASSERT_FALSE(large.ok());
  EXPECT_EQ(large.status().code(), absl::StatusCode::kResourceExhausted) << large.status();
  EXPECT_THAT(std::string(large.status().message()), HasSubstr("needs"));
  EXPECT_THAT(std::string(large.status().message()), HasSubstr("of the budget of"));
  // Still serving, with the same numbers as before.
  auto again = (*client)->Loglikelihood(PairOfLength(20));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->results(0).logprob(), small->results(0).logprob());
}

TEST(MemoryBudgetE2eTest, MalformedBudgetIsRefusedAtStart) {
  const std::string dir = testing::MakeTempDir("memory-budget-flag");
  ServerProcess server;
  const absl::Status started =
      server.Start(dir,
                   {"--model=llama=" + SourcePath("tests/golden/llama"),
                    "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
                    "--store=" + dir + "/store.sqlite", "--host_memory=lots"},
                   absl::Seconds(10));
  EXPECT_FALSE(started.ok());
  std::ifstream log(server.log_path());
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("--host_memory"));
}

}  // namespace
}  // namespace hgeval
