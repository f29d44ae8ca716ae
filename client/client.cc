#include "client/client.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <future>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace hgeval::client {
namespace v1 = ::hgeval::v1;

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

bool IsFinal(v1::JobState state) {
  return state == v1::JOB_STATE_SUCCEEDED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

absl::StatusOr<ServerTargets> ResolveServerTargets(const std::vector<std::string>& servers) {
  if (servers.empty()) return absl::InvalidArgumentError("no server given");
  if (servers.size() == 1) return ServerTargets{servers.front(), {}};
  std::vector<std::string> v4, v6;
  for (const std::string& server : servers) {
    const size_t colon = server.rfind(':');
    if (server.find(":/") != std::string::npos || colon == std::string::npos || colon == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--server list entry '", server,
                       "' is not host:port (a target such as dns:///name:port goes alone)"));
    }
    std::string host = server.substr(0, colon);
    const std::string port = server.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    addrinfo* found = nullptr;
    for (int family : {AF_INET, AF_INET6}) {
      addrinfo hints{};
      hints.ai_family = family;
      hints.ai_socktype = SOCK_STREAM;
      if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) == 0) break;
      found = nullptr;
    }
    if (found == nullptr) {
      return absl::UnavailableError(absl::StrCat("cannot resolve server '", server, "'"));
    }
    char text[INET6_ADDRSTRLEN] = {};
    if (found->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
                sizeof(text));
      v4.push_back(absl::StrCat(text, ":", port));
    } else {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr, text,
                sizeof(text));
      v6.push_back(absl::StrCat("[", text, "]:", port));
    }
    freeaddrinfo(found);
  }
  if (!v4.empty() && !v6.empty()) {
    return absl::InvalidArgumentError(
        "--server list mixes IPv4 and IPv6 servers; gRPC balances one family per target");
  }
  const absl::string_view scheme = v4.empty() ? "ipv6:" : "ipv4:";
  const std::vector<std::string>& addresses = v4.empty() ? v6 : v4;
  ServerTargets targets{absl::StrCat(scheme, absl::StrJoin(addresses, ",")), {}};
  for (const std::string& address : addresses) {
    targets.addresses.push_back(absl::StrCat(scheme, address));
  }
  return targets;
}

absl::StatusOr<std::string> ChannelTarget(const std::vector<std::string>& servers) {
  absl::StatusOr<ServerTargets> targets = ResolveServerTargets(servers);
  if (!targets.ok()) return targets.status();
  return targets->balanced;
}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  absl::StatusOr<ServerTargets> targets = ResolveServerTargets(options.servers);
  if (!targets.ok()) return targets.status();
  std::unique_ptr<Client> client(new Client(options));
  client->target_ = targets->balanced;
  client->parallel_calls_ =
      options.parallel_calls > 0
          ? options.parallel_calls
          : (options.servers.size() > 1 ? static_cast<int>(options.servers.size())
                                        : (absl::StartsWith(client->target_, "dns:") ? 4 : 1));
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  grpc::ChannelArguments args;
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls_ca_pem;
    credentials = grpc::SslCredentials(ssl);
    // A list is resolved to addresses: certificates are still checked against its first
    // host name.
    if (options.servers.size() > 1) {
      const std::string& first = options.servers.front();
      args.SetSslTargetNameOverride(first.substr(0, first.rfind(':')));
    }
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  // Every call to the next ready server (the default, pick_first, would send everything to
  // one).
  args.SetLoadBalancingPolicyName("round_robin");
  client->channel_ = grpc::CreateCustomChannel(client->target_, credentials, args);
  client->models_ = v1::ModelService::NewStub(client->channel_);
  for (const std::string& address : targets->addresses) {
    client->part_models_.push_back(
        v1::ModelService::NewStub(grpc::CreateCustomChannel(address, credentials, args)));
  }
  client->jobs_ = v1::JobService::NewStub(client->channel_);
  client->health_ = grpc::health::v1::Health::NewStub(client->channel_);
  return client;
}

void Client::Prepare(grpc::ClientContext& context, bool with_deadline) const {
  if (!options_.token.empty()) context.AddMetadata("authorization", "Bearer " + options_.token);
  if (with_deadline && options_.timeout > absl::ZeroDuration()) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  }
}

absl::StatusOr<std::string> Client::Health(const std::string& service) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = health_->Check(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

absl::Status Client::WaitServing(absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  for (;;) {
    absl::StatusOr<std::string> h = Health();
    if (h.ok() && *h == "SERVING") return absl::OkStatus();
    if (absl::Now() > end) {
      return absl::DeadlineExceededError(absl::StrCat(target_, " is not SERVING after ",
                                                      absl::FormatDuration(timeout), " (",
                                                      h.ok() ? *h : h.status().ToString(), ")"));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

absl::StatusOr<v1::ListModelsResponse> Client::ListModels() {
  grpc::ClientContext context;
  Prepare(context);
  v1::ListModelsResponse response;
  grpc::Status status = models_->ListModels(&context, {}, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::TokenizeResponse> Client::Tokenize(const v1::TokenizeRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  v1::TokenizeResponse response;
  grpc::Status status = models_->Tokenize(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::ClassifyResponse> Client::Classify(const v1::ClassifyRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  v1::ClassifyResponse response;
  grpc::Status status = models_->Classify(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

template <typename Response, typename Request, typename Call>
absl::StatusOr<Response> Client::SendPart(size_t index, const Request& part, Call call) {
  Response response;
  if (!part_models_.empty()) {
    grpc::ClientContext context;
    Prepare(context);
    grpc::Status status =
        call(*part_models_[index % part_models_.size()], &context, part, &response);
    if (status.ok()) return response;
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return FromGrpc(status);
    response.Clear();
  }
  grpc::ClientContext context;
  Prepare(context);
  grpc::Status status = call(*models_, &context, part, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

template <typename Response, typename Request, typename Call>
absl::StatusOr<Response> Client::SendParts(const std::vector<Request>& parts, Call call) {
  std::vector<std::future<absl::StatusOr<Response>>> futures;
  futures.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    futures.push_back(std::async(std::launch::async, [this, i, &parts, call] {
      return SendPart<Response>(i, parts[i], call);
    }));
  }
  Response merged;
  absl::Status first_error;
  for (auto& f : futures) {
    absl::StatusOr<Response> part = f.get();
    if (!part.ok()) {
      if (first_error.ok()) first_error = part.status();
      continue;
    }
    for (auto& r : *part->mutable_results()) *merged.add_results() = std::move(r);
  }
  if (!first_error.ok()) return first_error;
  return merged;
}

absl::StatusOr<v1::LoglikelihoodResponse> Client::Loglikelihood(
    const v1::LoglikelihoodRequest& request) {
  const int64_t n = request.pairs_size();
  int64_t shard =
      options_.shard_pairs > 0 ? options_.shard_pairs : (n + parallel_calls_ - 1) / parallel_calls_;
  shard = std::max<int64_t>(shard, 1);
  if (n <= shard) {
    grpc::ClientContext context;
    Prepare(context);
    v1::LoglikelihoodResponse response;
    grpc::Status status = models_->Loglikelihood(&context, request, &response);
    if (!status.ok()) return FromGrpc(status);
    return response;
  }
  // Every part carries the request's fields but only its own pairs (copied once here).
  v1::LoglikelihoodRequest fields = request;
  fields.clear_pairs();
  std::vector<v1::LoglikelihoodRequest> parts((n + shard - 1) / shard, fields);
  for (int64_t i = 0; i < n; ++i) {
    *parts[i / shard].add_pairs() = request.pairs(static_cast<int>(i));
  }
  return SendParts<v1::LoglikelihoodResponse>(
      parts, [](v1::ModelService::Stub& stub, grpc::ClientContext* context,
                const v1::LoglikelihoodRequest& part, v1::LoglikelihoodResponse* response) {
        return stub.Loglikelihood(context, part, response);
      });
}

absl::StatusOr<v1::LoglikelihoodRollingResponse> Client::LoglikelihoodRolling(
    const v1::LoglikelihoodRollingRequest& request) {
  const int n = request.inputs_size();
  const size_t servers = std::min<size_t>(parallel_calls_, std::max(n, 1));
  const int per = (n + static_cast<int>(servers) - 1) / static_cast<int>(servers);
  v1::LoglikelihoodRollingRequest fields = request;
  fields.clear_inputs();
  // An empty request still goes out as one (empty) call.
  std::vector<v1::LoglikelihoodRollingRequest> parts(n > 0 ? (n + per - 1) / per : 1, fields);
  for (int i = 0; i < n; ++i) *parts[i / per].add_inputs() = request.inputs(i);
  return SendParts<v1::LoglikelihoodRollingResponse>(
      parts,
      [](v1::ModelService::Stub& stub, grpc::ClientContext* context,
         const v1::LoglikelihoodRollingRequest& part, v1::LoglikelihoodRollingResponse* response) {
        return stub.LoglikelihoodRolling(context, part, response);
      });
}

absl::StatusOr<v1::GenerateResponse> Client::Generate(
    const v1::GenerateRequest& request,
    const std::function<void(const v1::GenerateResponse&)>& on_chunk,
    grpc::ClientContext* context) {
  grpc::ClientContext own;
  if (context == nullptr) context = &own;
  Prepare(*context);
  auto reader = models_->Generate(context, request);
  v1::GenerateResponse chunk, whole;
  while (reader->Read(&chunk)) {
    if (on_chunk) on_chunk(chunk);
    whole.mutable_text()->append(chunk.text());
    for (int32_t id : chunk.token_ids()) whole.add_token_ids(id);
    if (chunk.finished()) {
      whole.set_finished(true);
      whole.set_finish_reason(chunk.finish_reason());
      whole.set_prompt_tokens(chunk.prompt_tokens());
      whole.set_generated_tokens(chunk.generated_tokens());
      whole.set_cached(chunk.cached());
    }
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpc(status);
  return whole;
}

absl::StatusOr<std::string> Client::SubmitJob(const v1::SubmitJobRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  v1::SubmitJobResponse response;
  grpc::Status status = jobs_->SubmitJob(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.job_id();
}

absl::Status Client::FetchResultsLeftOut(v1::Job& job) {
  if (!IsFinal(job.state()) || job.results_bytes() == 0 || !job.results_json().empty() ||
      !job.results_csv().empty()) {
    return absl::OkStatus();
  }
  grpc::ClientContext context;
  Prepare(context, /*with_deadline=*/false);
  v1::GetJobRequest request;
  request.set_job_id(job.id());
  auto reader = jobs_->GetJobResults(&context, request);
  v1::JobResultsChunk chunk;
  std::string json, csv;
  while (reader->Read(&chunk)) {
    json += chunk.results_json();
    csv += chunk.results_csv();
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpc(status);
  if (static_cast<int64_t>(json.size() + csv.size()) != job.results_bytes()) {
    return absl::DataLossError(absl::StrCat("job ", job.id(), ": received ",
                                            json.size() + csv.size(),
                                            " bytes of results, expected ", job.results_bytes()));
  }
  job.set_results_json(std::move(json));
  job.set_results_csv(std::move(csv));
  return absl::OkStatus();
}

absl::StatusOr<v1::Job> Client::GetJob(const std::string& id) {
  grpc::ClientContext context;
  Prepare(context);
  v1::GetJobRequest request;
  request.set_job_id(id);
  v1::Job job;
  grpc::Status status = jobs_->GetJob(&context, request, &job);
  if (!status.ok()) return FromGrpc(status);
  if (absl::Status s = FetchResultsLeftOut(job); !s.ok()) return s;
  return job;
}

absl::StatusOr<v1::ListJobsResponse> Client::ListJobs(int limit) {
  grpc::ClientContext context;
  Prepare(context);
  v1::ListJobsRequest request;
  request.set_limit(limit);
  v1::ListJobsResponse response;
  grpc::Status status = jobs_->ListJobs(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::Series> Client::SubmitSeries(const v1::SubmitSeriesRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  v1::Series response;
  grpc::Status status = jobs_->SubmitSeries(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::Series> Client::GetSeries(const std::string& id) {
  grpc::ClientContext context;
  Prepare(context);
  v1::GetSeriesRequest request;
  request.set_series_id(id);
  v1::Series response;
  grpc::Status status = jobs_->GetSeries(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response;
}

absl::StatusOr<v1::Job> Client::CancelJob(const std::string& id) {
  grpc::ClientContext context;
  Prepare(context);
  v1::CancelJobRequest request;
  request.set_job_id(id);
  v1::Job job;
  grpc::Status status = jobs_->CancelJob(&context, request, &job);
  if (!status.ok()) return FromGrpc(status);
  return job;
}

absl::StatusOr<v1::Job> Client::WatchJob(const std::string& id,
                                         const std::function<void(const v1::Job&)>& on_update,
                                         absl::Duration reconnect_for) {
  absl::Time last_contact = absl::Now();
  v1::Job last;
  for (;;) {
    grpc::ClientContext context;
    Prepare(context, /*with_deadline=*/false);
    v1::WatchJobRequest request;
    request.set_job_id(id);
    auto reader = jobs_->WatchJob(&context, request);
    v1::Job job;
    while (reader->Read(&job)) {
      last_contact = absl::Now();
      last = job;
      if (on_update) on_update(job);
    }
    grpc::Status status = reader->Finish();
    if (IsFinal(last.state()) && last.id() == id) {
      if (absl::Status s = FetchResultsLeftOut(last); !s.ok()) return s;
      return last;
    }
    const grpc::StatusCode code = status.error_code();
    // Answers that another try would get again end the watch: a damaged job record
    // (DATA_LOSS) used to be retried silently for `reconnect_for`.
    if (code == grpc::StatusCode::NOT_FOUND || code == grpc::StatusCode::UNAUTHENTICATED ||
        code == grpc::StatusCode::INVALID_ARGUMENT || code == grpc::StatusCode::PERMISSION_DENIED ||
        code == grpc::StatusCode::DATA_LOSS || code == grpc::StatusCode::FAILED_PRECONDITION ||
        code == grpc::StatusCode::UNIMPLEMENTED) {
      return FromGrpc(status);
    }
    if (absl::Now() - last_contact > reconnect_for) {
      return absl::UnavailableError(absl::StrCat("lost the server while watching job ", id, " (",
                                                 status.error_message(), ")"));
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
}

}  // namespace hgeval::client
