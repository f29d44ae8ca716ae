// Client::WatchJob re-opens a dropped stream (UNAVAILABLE: a restart, another server of the
// fleet) but not one the server ended for good: a job whose shard record is damaged is
// DATA_LOSS, and `hgeval watch` used to retry it silently for 10 minutes (issue 29 item 10).
// A fake JobService in this process answers every WatchJob with one status.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "hgeval/v1/jobs.grpc.pb.h"

namespace hgeval::client {
namespace {
namespace v1 = ::hgeval::v1;

class FakeJobService final : public v1::JobService::Service {
 public:
  explicit FakeJobService(grpc::Status answer) : answer_(std::move(answer)) {}
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest*,
                        grpc::ServerWriter<v1::Job>*) override {
    ++calls_;
    return answer_;
  }
  int calls() const { return calls_.load(); }

 private:
  const grpc::Status answer_;
  std::atomic<int> calls_{0};
};

struct Watched {
  absl::Status status;
  absl::Duration took;
  int calls = 0;
};

Watched WatchAgainst(grpc::Status answer, absl::Duration reconnect_for) {
  FakeJobService service(std::move(answer));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  EXPECT_GT(port, 0);
  ClientOptions options;
  options.servers = {"127.0.0.1:" + std::to_string(port)};
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status();
  Watched watched;
  const absl::Time start = absl::Now();
  watched.status = (*client)->WatchJob("job-1", nullptr, reconnect_for).status();
  watched.took = absl::Now() - start;
  watched.calls = service.calls();
  server->Shutdown();
  return watched;
}

TEST(WatchJobRetryTest, ADamagedJobRecordEndsTheWatchAtOnce) {
  const Watched watched = WatchAgainst(
      grpc::Status(grpc::StatusCode::DATA_LOSS, "job shard outcome: damaged"), absl::Minutes(10));
  EXPECT_EQ(watched.status.code(), absl::StatusCode::kDataLoss) << watched.status;
  EXPECT_NE(watched.status.message().find("damaged"), std::string::npos);
  EXPECT_EQ(watched.calls, 1);
  EXPECT_LT(watched.took, absl::Seconds(5));
}

TEST(WatchJobRetryTest, ADroppedStreamIsReopenedUntilReconnectForPasses) {
  const Watched watched = WatchAgainst(grpc::Status(grpc::StatusCode::UNAVAILABLE, "restarting"),
                                       absl::Milliseconds(1500));
  EXPECT_EQ(watched.status.code(), absl::StatusCode::kUnavailable) << watched.status;
  EXPECT_GE(watched.calls, 2);
}

}  // namespace
}  // namespace hgeval::client
