// A large Loglikelihood or rolling request is split into parts that go to the listed
// servers in turn (`--server A,B`), so each gets its share however the connections raced:
// under round_robin alone, parts sent before the second server's connection was up all
// went to the first (a fleet test missed a replica on a loaded CI machine). A part whose
// server cannot be reached is answered by another. Fake ModelServices in this process
// count the calls and echo each pair's first context id as its log-probability.
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "hgeval/v1/models.grpc.pb.h"

namespace hgeval::client {
namespace {
namespace v1 = ::hgeval::v1;

class CountingModelService final : public v1::ModelService::Service {
 public:
  grpc::Status Loglikelihood(grpc::ServerContext*, const v1::LoglikelihoodRequest* request,
                             v1::LoglikelihoodResponse* response) override {
    ++calls_;
    for (const v1::LoglikelihoodPair& pair : request->pairs()) {
      response->add_results()->set_logprob(pair.context_ids(0));
    }
    return grpc::Status::OK;
  }
  grpc::Status LoglikelihoodRolling(grpc::ServerContext*,
                                    const v1::LoglikelihoodRollingRequest* request,
                                    v1::LoglikelihoodRollingResponse* response) override {
    ++calls_;
    for (const v1::RollingInput& input : request->inputs()) {
      response->add_results()->set_logprob(input.ids(0));
    }
    return grpc::Status::OK;
  }
  int calls() const { return calls_.load(); }

 private:
  std::atomic<int> calls_{0};
};

class FakeServer {
 public:
  FakeServer() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~FakeServer() { server_->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int calls() const { return service_.calls(); }

 private:
  CountingModelService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// A local address nothing listens on: a port the kernel gave out and that was closed again.
std::string ClosedAddress() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), length), 0);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

std::unique_ptr<Client> ConnectTo(const std::vector<std::string>& servers) {
  ClientOptions options;
  options.servers = servers;
  options.timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(*client) : nullptr;
}

v1::LoglikelihoodRequest PairsNumbered(int count) {
  v1::LoglikelihoodRequest request;
  request.set_model("m");
  for (int i = 0; i < count; ++i) {
    v1::LoglikelihoodPair* pair = request.add_pairs();
    pair->add_context_ids(i);
    pair->add_continuation_ids(0);
  }
  return request;
}

void ExpectNumberedInOrder(const absl::StatusOr<v1::LoglikelihoodResponse>& response, int count) {
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->results_size(), count);
  for (int i = 0; i < count; ++i) EXPECT_EQ(response->results(i).logprob(), i);
}

TEST(SplitRequestSpreadTest, EveryListedServerGetsItsPartOfEverySplitRequest) {
  FakeServer a, b;
  std::unique_ptr<Client> client = ConnectTo({a.address(), b.address()});
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->parallel_calls(), 2);
  for (int round = 1; round <= 3; ++round) {
    ExpectNumberedInOrder(client->Loglikelihood(PairsNumbered(7)), 7);
    EXPECT_EQ(a.calls(), round);
    EXPECT_EQ(b.calls(), round);
  }
  v1::LoglikelihoodRollingRequest rolling;
  rolling.set_model("m");
  for (int i = 0; i < 4; ++i) rolling.add_inputs()->add_ids(i);
  absl::StatusOr<v1::LoglikelihoodRollingResponse> rolled = client->LoglikelihoodRolling(rolling);
  ASSERT_TRUE(rolled.ok()) << rolled.status();
  ASSERT_EQ(rolled->results_size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(rolled->results(i).logprob(), i);
  EXPECT_EQ(a.calls(), 4);
  EXPECT_EQ(b.calls(), 4);
}

TEST(SplitRequestSpreadTest, APartForAnUnreachableServerIsAnsweredByAnother) {
  FakeServer live;
  std::unique_ptr<Client> client = ConnectTo({ClosedAddress(), live.address()});
  ASSERT_NE(client, nullptr);
  ExpectNumberedInOrder(client->Loglikelihood(PairsNumbered(6)), 6);
  EXPECT_EQ(live.calls(), 2);
}

}  // namespace
}  // namespace hgeval::client
