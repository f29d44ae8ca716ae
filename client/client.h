// A small C++ client for hgeval-server: model calls, jobs (with re-watching after dropped
// connections) and health checks, over one gRPC channel. Several servers (a list, or a
// dns:/// name resolving to many) are one channel under gRPC's round_robin policy: each
// call goes to the next ready server, and calls avoid servers that went away. The parts of a
// large request go to the listed servers in turn. Every call returns absl::Status with the
// server's code and message.
#ifndef HGEVAL_CLIENT_CLIENT_H_
#define HGEVAL_CLIENT_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "hgeval/v1/jobs.grpc.pb.h"
#include "hgeval/v1/models.grpc.pb.h"

namespace hgeval::client {

struct ClientOptions {
  // One gRPC target ("host:port", "dns:///name:port", "ipv4:a:p,b:p", ...) or several
  // host:port addresses: balanced by gRPC's round_robin policy (ChannelTarget).
  std::vector<std::string> servers;
  // Bearer token sent as `authorization: Bearer <token>` (empty: none).
  std::string token;
  bool tls = false;
  std::string tls_ca_pem;  // root certificates for TLS (empty: system roots)
  // Per-call deadline (0: none).
  absl::Duration timeout = absl::ZeroDuration();
  // Calls kept in flight at once for one large request (a Loglikelihood or rolling request
  // is split into this many calls, which go to the listed servers in turn). 0: the
  // number of addresses given (4 for a single dns:/// name).
  int parallel_calls = 0;
  // Pairs per call when a Loglikelihood request is split (0: split evenly over
  // parallel_calls).
  int64_t shard_pairs = 0;
};

absl::Status FromGrpc(const grpc::Status& status);

// The channel targets for `servers` (host names resolved here, once).
struct ServerTargets {
  // One entry as given; several host:port entries as one ipv4:/ipv6: target that
  // round_robin balances ("ipv4:a:1,b:2").
  std::string balanced;
  // Several entries: one single-address target each, in list order ("ipv4:a:1",
  // "ipv4:b:2"); none for one entry (an address or a dns:/// name).
  std::vector<std::string> addresses;
};
absl::StatusOr<ServerTargets> ResolveServerTargets(const std::vector<std::string>& servers);
// ResolveServerTargets(servers)->balanced.
absl::StatusOr<std::string> ChannelTarget(const std::vector<std::string>& servers);

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  const ClientOptions& options() const { return options_; }
  // The channel's target (see ChannelTarget).
  const std::string& target() const { return target_; }
  // Calls kept in flight for one large request (ClientOptions::parallel_calls resolved).
  int parallel_calls() const { return parallel_calls_; }

  // "SERVING", "NOT_SERVING", ... for `service` ("" = the whole server), from the server
  // the channel picks.
  absl::StatusOr<std::string> Health(const std::string& service = "");
  // Waits until a server reports SERVING.
  absl::Status WaitServing(absl::Duration timeout);

  absl::StatusOr<hgeval::v1::ListModelsResponse> ListModels();
  absl::StatusOr<hgeval::v1::TokenizeResponse> Tokenize(const hgeval::v1::TokenizeRequest& request);
  // LRA classification.
  absl::StatusOr<hgeval::v1::ClassifyResponse> Classify(const hgeval::v1::ClassifyRequest& request);
  // Splits the pairs into contiguous parts sent as concurrent calls (part i to the i-th
  // listed server, round_robin for a dns:/// name) and merges the results in order.
  absl::StatusOr<hgeval::v1::LoglikelihoodResponse> Loglikelihood(
      const hgeval::v1::LoglikelihoodRequest& request);
  absl::StatusOr<hgeval::v1::LoglikelihoodRollingResponse> LoglikelihoodRolling(
      const hgeval::v1::LoglikelihoodRollingRequest& request);
  // Streams the generation; `on_chunk` sees every message. Returns the concatenated
  // result (text and token ids of all messages, finish fields of the last). `context`
  // may be given to cancel from another thread.
  absl::StatusOr<hgeval::v1::GenerateResponse> Generate(
      const hgeval::v1::GenerateRequest& request,
      const std::function<void(const hgeval::v1::GenerateResponse&)>& on_chunk = nullptr,
      grpc::ClientContext* context = nullptr);

  absl::StatusOr<std::string> SubmitJob(const hgeval::v1::SubmitJobRequest& request);
  // GetJob and WatchJob return a finished job with its results: where the server left
  // them out of the message (Job.results_bytes over its inline limit) they are fetched
  // with GetJobResults.
  absl::StatusOr<hgeval::v1::Job> GetJob(const std::string& id);
  absl::StatusOr<hgeval::v1::ListJobsResponse> ListJobs(int limit);
  // Checkpoint series (docs/series.md): each point's job runs on the server.
  absl::StatusOr<hgeval::v1::Series> SubmitSeries(const hgeval::v1::SubmitSeriesRequest& request);
  absl::StatusOr<hgeval::v1::Series> GetSeries(const std::string& id);
  absl::StatusOr<hgeval::v1::Job> CancelJob(const std::string& id);
  // Watches until the job reaches a final state, calling `on_update` for every state
  // seen. A dropped stream (UNAVAILABLE, server restart...) is re-opened until
  // `reconnect_for` passes without a successful reconnection (on a fleet sharing a store,
  // the re-opened stream may be served by another server); an answer another try would
  // get again (NOT_FOUND, DATA_LOSS for a damaged job record, ...) ends it at once.
  absl::StatusOr<hgeval::v1::Job> WatchJob(
      const std::string& id, const std::function<void(const hgeval::v1::Job&)>& on_update,
      absl::Duration reconnect_for = absl::Minutes(10));

  // Sets the token and deadline on a context.
  void Prepare(grpc::ClientContext& context, bool with_deadline = true) const;

  hgeval::v1::ModelService::Stub& models() { return *models_; }
  hgeval::v1::JobService::Stub& jobs() { return *jobs_; }
  std::shared_ptr<grpc::Channel> channel() { return channel_; }

 private:
  // Fills in a finished job's results left out of its message (GetJobResults).
  absl::Status FetchResultsLeftOut(hgeval::v1::Job& job);

  // Sends part `index` of a split request to the listed server it falls to, or, where
  // there is no list or that server cannot be reached (UNAVAILABLE), over the balanced
  // channel, which avoids servers that went away.
  template <typename Response, typename Request, typename Call>
  absl::StatusOr<Response> SendPart(size_t index, const Request& part, Call call);
  // Sends the parts as concurrent calls (SendPart) and merges their results in order; the
  // first failed part's status where any failed.
  template <typename Response, typename Request, typename Call>
  absl::StatusOr<Response> SendParts(const std::vector<Request>& parts, Call call);

  explicit Client(ClientOptions options) : options_(std::move(options)) {}

  ClientOptions options_;
  std::string target_;
  int parallel_calls_ = 1;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<hgeval::v1::ModelService::Stub> models_;
  // One channel per address of a host:port list. The parts of a split request go to them
  // in turn, so every listed server gets its share; round_robin alone sends everything to
  // whichever connection came up first until the others are ready.
  std::vector<std::unique_ptr<hgeval::v1::ModelService::Stub>> part_models_;
  std::unique_ptr<hgeval::v1::JobService::Stub> jobs_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
};

bool IsFinal(hgeval::v1::JobState state);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_CLIENT_H_
