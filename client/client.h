// A small C++ client for hgeval-server: model calls (sharded over several servers),
// jobs (with re-watching after dropped connections) and health checks. Every call
// returns absl::Status with the server's code and message.
#ifndef HGEVAL_CLIENT_CLIENT_H_
#define HGEVAL_CLIENT_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "hgeval/v1/jobs.grpc.pb.h"
#include "hgeval/v1/models.grpc.pb.h"

namespace hgeval::client {

struct ClientOptions {
  // host:port of each server; model calls are sharded over all of them.
  std::vector<std::string> servers;
  // Bearer token sent as `authorization: Bearer <token>` (empty: none).
  std::string token;
  bool tls = false;
  std::string tls_ca_pem;  // root certificates for TLS (empty: system roots)
  // Per-call deadline (0: none).
  absl::Duration timeout = absl::ZeroDuration();
  // Pairs per call when a Loglikelihood request is split into shards (0: split evenly).
  int64_t shard_pairs = 0;
};

absl::Status FromGrpc(const grpc::Status& status);

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  size_t num_servers() const { return servers_.size(); }
  const ClientOptions& options() const { return options_; }

  // "SERVING", "NOT_SERVING", ... for `service` ("" = the whole server) on server i.
  absl::StatusOr<std::string> Health(size_t server = 0, const std::string& service = "");
  // Waits until every server reports SERVING.
  absl::Status WaitServing(absl::Duration timeout);

  absl::StatusOr<hgeval::v1::ListModelsResponse> ListModels(size_t server = 0);
  absl::StatusOr<hgeval::v1::TokenizeResponse> Tokenize(const hgeval::v1::TokenizeRequest& request);
  // LRA classification on the first server.
  absl::StatusOr<hgeval::v1::ClassifyResponse> Classify(const hgeval::v1::ClassifyRequest& request);
  // Splits the pairs into contiguous shards, one concurrent call per shard spread over the
  // servers, and merges the results in order.
  absl::StatusOr<hgeval::v1::LoglikelihoodResponse> Loglikelihood(
      const hgeval::v1::LoglikelihoodRequest& request);
  absl::StatusOr<hgeval::v1::LoglikelihoodRollingResponse> LoglikelihoodRolling(
      const hgeval::v1::LoglikelihoodRollingRequest& request);
  // Streams the generation (servers taken in turn); `on_chunk` sees every message. Returns the concatenated
  // result (text and token ids of all messages, finish fields of the last). `context`
  // may be given to cancel from another thread.
  absl::StatusOr<hgeval::v1::GenerateResponse> Generate(
      const hgeval::v1::GenerateRequest& request,
      const std::function<void(const hgeval::v1::GenerateResponse&)>& on_chunk = nullptr,
      grpc::ClientContext* context = nullptr);

  absl::StatusOr<std::string> SubmitJob(const hgeval::v1::SubmitJobRequest& request,
                                        size_t server = 0);
  absl::StatusOr<hgeval::v1::Job> GetJob(const std::string& id, size_t server = 0);
  absl::StatusOr<hgeval::v1::ListJobsResponse> ListJobs(int limit, size_t server = 0);
  absl::StatusOr<hgeval::v1::Job> CancelJob(const std::string& id, size_t server = 0);
  // Watches until the job reaches a final state, calling `on_update` for every state
  // seen. A dropped stream (UNAVAILABLE, server restart...) is re-opened until
  // `reconnect_for` passes without a successful reconnection.
  absl::StatusOr<hgeval::v1::Job> WatchJob(
      const std::string& id, const std::function<void(const hgeval::v1::Job&)>& on_update,
      absl::Duration reconnect_for = absl::Minutes(10), size_t server = 0);

  // Sets the token and deadline on a context.
  void Prepare(grpc::ClientContext& context, bool with_deadline = true) const;

  hgeval::v1::ModelService::Stub& models(size_t i) { return *servers_[i].models; }
  hgeval::v1::JobService::Stub& jobs(size_t i) { return *servers_[i].jobs; }
  std::shared_ptr<grpc::Channel> channel(size_t i) { return servers_[i].channel; }

 private:
  struct Server {
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<hgeval::v1::ModelService::Stub> models;
    std::unique_ptr<hgeval::v1::JobService::Stub> jobs;
    std::unique_ptr<grpc::health::v1::Health::Stub> health;
  };
  explicit Client(ClientOptions options) : options_(std::move(options)) {}

  ClientOptions options_;
  std::vector<Server> servers_;
  std::atomic<size_t> next_server_{0};  // round-robin for Generate
};

bool IsFinal(hgeval::v1::JobState state);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_CLIENT_H_
