// hgeval-server: the gRPC service (hgeval.v1.ModelService, hgeval.v1.JobService,
// grpc.health.v1.Health, server reflection). See docs/service.md and --help.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "engine/cli/command_line.h"
#include "engine/cli/load_flags.h"
#include "server/core/auth.h"
#include "server/core/log.h"
#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "server/http/openai_completions.h"
#include "server/http/openai_http_server.h"
#include "server/http/web/web_ui.h"
#include "server/jobs/job_manager.h"
#include "server/jobs/job_runner.h"
#include "server/rpc/job_service.h"
#include "server/rpc/model_service.h"
#include "server/store/result_store.h"
#include "tasks/programs/eval_flags.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to listen on (host:port). Port 0 picks a free port (see --port_file).");
ABSL_FLAG(std::string, port_file, "",
          "Write the bound port number to this file once listening (useful with port 0).");
ABSL_FLAG(std::string, http_listen, "",
          "Also serve OpenAI's completions API over plain HTTP on this host:port (GET "
          "/v1/models, POST /v1/completions, as lm-eval's local-completions model uses them; "
          "vLLM's /tokenizer_info, /tokenize, /detokenize for lm-eval's remote tokenizer) and "
          "the results web UI under /ui (jobs, results, NIAH heatmaps, samples). "
          "Calls go through the gRPC service's own handlers: the same request rules, limits, "
          "result store, scheduler and bearer token (header 'Authorization: Bearer <token>'). "
          "Empty (default): off. Port 0 picks a free port (see --http_port_file).");
ABSL_FLAG(std::vector<std::string>, http_tokenizer_bos, {},
          "Models whose HTTP /tokenize always adds the tokenizer's special tokens (BOS), "
          "whatever add_special_tokens says: lm-eval's remote tokenizer then encodes in the "
          "tokenizer BOS regime (hgeval-eval's default, --bos=tokenizer).");
ABSL_FLAG(std::string, http_port_file, "",
          "Write the bound --http_listen port to this file once listening.");
ABSL_FLAG(int64_t, http_head_timeout_ms, 10000,
          "HTTP: a request's line and headers must arrive within this long of its first byte "
          "(slow senders are answered 408 and closed).");
ABSL_FLAG(int64_t, http_body_timeout_ms, 60000,
          "HTTP: a request's whole body must arrive within this long of its headers (408).");
ABSL_FLAG(int64_t, http_idle_timeout_ms, 5000,
          "HTTP: a connection waiting for the first byte of a request is closed after this "
          "long (kept-alive ones too).");
ABSL_FLAG(int64_t, http_write_timeout_ms, 30000,
          "HTTP: a response must be taken by the client within this long.");
ABSL_FLAG(int, http_max_connections, 256,
          "HTTP: open connections at most; over it the oldest idle one (else the oldest still "
          "receiving a body) is closed, or the new one gets 503 when all are being handled.");
ABSL_FLAG(int, http_max_connections_per_client, 64,
          "HTTP: open connections per client address at most, as --http_max_connections.");
ABSL_FLAG(int64_t, http_max_response_bytes, 64 << 20,
          "HTTP: /v1/completions refuses (400) a request whose response would be larger "
          "(prompts x shown tokens x (1 + logprobs)), estimated before computing; the web UI "
          "reads and serves no job results larger than this.");
ABSL_FLAG(int64_t, http_max_json_elements, 1 << 21,
          "HTTP: JSON values in one request body at most (nesting is capped at 64 levels).");
ABSL_FLAG(std::string, config, "",
          "JSON model config: {\"models\": [{\"name\", \"path\", \"tokenizer\"?, \"device\"?, "
          "\"dtype\"?, \"max_context\"?}], \"roots\": [...], \"default_tokenizer\"?}. Relative "
          "paths are relative "
          "to the config file.");
ABSL_FLAG(std::vector<std::string>, model, {},
          "Models as NAME=PATH (comma-separated list, one flag; PATH is a Hugging Face folder, a "
          "llama2.c "
          ".bin file or a folder holding one). Tokenizer: found beside the model, else "
          "--tokenizer.");
ABSL_FLAG(std::vector<std::string>, model_root, {},
          "Folders whose sub-folders are models named by the sub-folder (comma-separated). "
          "Client-given names resolve only inside these roots.");
ABSL_FLAG(std::string, tokenizer, "",
          "Tokenizer (file or folder) for models whose folder has none; \"none\": such models "
          "take token-level requests only (e.g. MQAR checkpoints).");
ABSL_FLAG(std::vector<std::string>, preload, {},
          "Models to load before reporting SERVING (comma-separated; 'all' for every model). "
          "Others load on first use.");
ABSL_FLAG(std::string, store, "hgeval-store.sqlite",
          "Result store (results and jobs): a SQLite file (':memory:' keeps nothing across "
          "restarts), or postgresql://user@host:port/db for one store shared by a fleet of "
          "servers (jobs split into shards that every server claims; password through "
          "PGPASSWORD or ~/.pgpass rather than the URI).");
ABSL_FLAG(std::string, replica, "",
          "This server's name in job shard claims: unique among servers sharing a store and "
          "stable across restarts (a restarted server takes its shards back at once). "
          "Empty: <hostname>:<port>.");
ABSL_FLAG(int64_t, job_lease_ms, 30000,
          "A job shard claimed by a server that stops renewing it (killed, cut off) is "
          "claimed by another server after this long.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File holding the bearer token clients must send (metadata 'authorization: Bearer "
          "<token>'). Also $HGEVAL_AUTH_TOKEN. Empty: no authentication.");
ABSL_FLAG(std::string, tls_cert, "", "PEM server certificate chain: serve TLS (with --tls_key).");
ABSL_FLAG(std::string, tls_key, "", "PEM private key for --tls_cert.");
ABSL_FLAG(int64_t, max_request_pairs, 4096,
          "Most pairs (or rolling inputs) per call; more is RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_request_tokens, 1 << 20,
          "Most tokens per call summed over its pairs, counted before truncation; more is "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_request_bytes, 8 << 20,
          "Most bytes per call: the whole request message (texts, stop strings, names, ids; "
          "SubmitJob specs too), checked before anything is tokenized or stored; more is "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_watch_streams, 1024,
          "WatchJob streams open at once; more is RESOURCE_EXHAUSTED (each holds up to two "
          "updates, shared with the job's other streams).");
ABSL_FLAG(int64_t, max_series_checkpoints, 1024,
          "Checkpoints in one SubmitSeries (each becomes a job); more is INVALID_ARGUMENT.");
ABSL_FLAG(int64_t, max_sequence_tokens, 32768,
          "Longest sequence for models without their own limit (recurrent models); models with "
          "a limit use the smaller of the two.");
ABSL_FLAG(int64_t, max_generate_tokens, 2048, "Largest max_tokens of a generation.");
ABSL_FLAG(int64_t, max_batch_tokens, 0,
          "Tokens per scoring round / Model::Forward call (the packed batch size); 0: the "
          "model's choice (4096 on the CPU, 16384 on CUDA).");
ABSL_FLAG(int64_t, max_queued_requests, 16384,
          "Scoring requests queued per model before calls fail with RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_generations, 256,
          "Generations queued or running per model before RESOURCE_EXHAUSTED.");
ABSL_FLAG(int64_t, max_message_bytes, 64 << 20,
          "Largest request message in bytes: gRPC messages, and HTTP bodies counted after "
          "decoding (chunked, gzip, deflate) with 413 as soon as one is over.");
ABSL_FLAG(int64_t, max_inline_results_bytes, hgeval::server::kDefaultMaxInlineResultsBytes,
          "Job results larger than this stay out of WatchJob/GetJob messages and are fetched "
          "in pieces with GetJobResults (the hgeval client does this itself).");
ABSL_FLAG(int, job_workers, 1, "Jobs run at the same time.");
ABSL_FLAG(int, startup_delay_ms, 0,
          "Keep reporting NOT_SERVING this long after the port opens (load-balancer warm-up; "
          "also lets tests observe start-up).");
ABSL_FLAG(int, shutdown_grace_ms, 1000,
          "On SIGTERM/SIGINT: report NOT_SERVING and refuse new calls, give calls in flight this "
          "long to finish, then end them with UNAVAILABLE and stop.");
ABSL_FLAG(bool, log, true, "Structured logs (one key=value line per event) on stderr.");

namespace hgeval::server {
namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal = sig; }

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, " is not a readable regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Written atomically (rename) so that a reader never sees a partial number.
void WritePortFile(const std::string& path, int port) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << port << "\n";
  std::rename(tmp.c_str(), path.c_str());
}

int Run() {
  SetLoggingEnabled(absl::GetFlag(FLAGS_log));
  RegistryOptions registry_options;
  if (!absl::GetFlag(FLAGS_config).empty()) {
    if (absl::Status s = ParseRegistryConfig(absl::GetFlag(FLAGS_config), registry_options);
        !s.ok()) {
      LogError("config_invalid", {{"error", s.ToString()}});
      return 2;
    }
  }
  // --device, --dtype, --max_context: every --model and --model_root model's (a --config
  // entry may say otherwise); --threads: the CPU models'.
  absl::StatusOr<LoadOptions> load = cli::LoadOptionsFromFlags();
  if (!load.ok()) {
    LogError("flag_invalid", {{"error", load.status().ToString()}});
    return 2;
  }
  for (const std::string& m : absl::GetFlag(FLAGS_model)) {
    std::pair<std::string, std::string> kv = absl::StrSplit(m, absl::MaxSplits('=', 1));
    if (!IsValidModelName(kv.first) || kv.second.empty()) {
      LogError("flag_invalid", {{"flag", "model"}, {"value", m}});
      return 2;
    }
    ModelSpec spec;
    spec.name = kv.first;
    spec.path = kv.second;
    spec.device = load->device;
    spec.dtype = load->dtype;
    spec.max_context = load->max_context;
    registry_options.models.push_back(spec);
  }
  registry_options.root_model_defaults.device = load->device;
  registry_options.root_model_defaults.dtype = load->dtype;
  registry_options.root_model_defaults.max_context = load->max_context;
  for (const std::string& root : absl::GetFlag(FLAGS_model_root))
    registry_options.roots.push_back(root);
  if (!absl::GetFlag(FLAGS_tokenizer).empty()) {
    registry_options.default_tokenizer = absl::GetFlag(FLAGS_tokenizer);
  }
  registry_options.max_sequence_tokens = absl::GetFlag(FLAGS_max_sequence_tokens);
  registry_options.threads = load->threads;
  registry_options.device_memory = load->device_memory;
  registry_options.host_memory = load->host_memory;
  registry_options.scheduler.max_batch_tokens = absl::GetFlag(FLAGS_max_batch_tokens);
  registry_options.scheduler.max_queued_requests = absl::GetFlag(FLAGS_max_queued_requests);
  registry_options.scheduler.max_generations = absl::GetFlag(FLAGS_max_generations);

  // Authentication fails closed: a token source that was asked for but holds no token
  // stops the server instead of starting it open to everyone.
  std::string token;
  if (const char* env = std::getenv("HGEVAL_AUTH_TOKEN"); env != nullptr) {
    token = std::string(absl::StripAsciiWhitespace(env));
    if (token.empty()) {
      LogError("auth_token_empty",
               {{"error",
                 "HGEVAL_AUTH_TOKEN is set but empty; unset it to serve without "
                 "authentication"}});
      std::fprintf(stderr, "hgeval-server: HGEVAL_AUTH_TOKEN is set but holds no token\n");
      return 2;
    }
  }
  if (!absl::GetFlag(FLAGS_auth_token_file).empty()) {
    const std::string path = absl::GetFlag(FLAGS_auth_token_file);
    absl::StatusOr<std::string> t = ReadFile(path);
    if (!t.ok()) {
      LogError("auth_token_unreadable", {{"error", t.status().ToString()}});
      std::fprintf(stderr, "hgeval-server: --auth_token_file: %s\n",
                   std::string(t.status().message()).c_str());
      return 2;
    }
    token = std::string(absl::StripAsciiWhitespace(*t));
    if (token.empty()) {
      LogError("auth_token_empty", {{"error", absl::StrCat(path, " holds no token")}});
      std::fprintf(stderr,
                   "hgeval-server: --auth_token_file %s holds no token; refusing to start "
                   "without authentication\n",
                   path.c_str());
      return 2;
    }
  }
  if (absl::Status s = ValidateBearerToken(token); !s.ok()) {
    LogError("auth_token_invalid", {{"error", s.ToString()}});
    std::fprintf(stderr, "hgeval-server: the auth token: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  BearerAuth auth(token);

  absl::StatusOr<std::unique_ptr<ResultStore>> store =
      ResultStore::Open(absl::GetFlag(FLAGS_store));
  if (!store.ok()) {
    LogError("store_open_failed", {{"error", store.status().ToString()}});
    return 2;
  }
  ModelRegistry registry(registry_options);
  Executor executor(store->get());
  ServiceLimits limits;
  limits.max_request_pairs = absl::GetFlag(FLAGS_max_request_pairs);
  limits.max_request_tokens = absl::GetFlag(FLAGS_max_request_tokens);
  limits.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  limits.max_generate_tokens = absl::GetFlag(FLAGS_max_generate_tokens);
  ModelServiceImpl model_service(&registry, &executor, &auth, limits);
  JobManagerOptions job_options;
  job_options.data_dir = tasks::DataDirFromFlags();
  job_options.workers = absl::GetFlag(FLAGS_job_workers);
  job_options.lease = absl::Milliseconds(std::max<int64_t>(1, absl::GetFlag(FLAGS_job_lease_ms)));
  JobManager jobs(store->get(), &registry, &executor, job_options);
  JobServiceLimits job_limits;
  job_limits.max_inline_results_bytes = absl::GetFlag(FLAGS_max_inline_results_bytes);
  job_limits.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  job_limits.max_watch_streams = absl::GetFlag(FLAGS_max_watch_streams);
  JobServiceImpl job_service(&jobs, &auth, job_limits);
  SeriesLimits series_limits;
  series_limits.max_checkpoints = absl::GetFlag(FLAGS_max_series_checkpoints);
  SeriesManager series(store->get(), &jobs, series_limits);
  job_service.set_series(&series);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> credentials;
  bool tls = false;
  const std::string cert = absl::GetFlag(FLAGS_tls_cert), key = absl::GetFlag(FLAGS_tls_key);
  if (!cert.empty() || !key.empty()) {
    absl::StatusOr<std::string> cert_pem = ReadFile(cert), key_pem = ReadFile(key);
    if (!cert_pem.ok() || !key_pem.ok()) {
      LogError("tls_files_unreadable", {{"cert", cert}, {"key", key}});
      return 2;
    }
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
    credentials = grpc::SslServerCredentials(ssl);
    tls = true;
  } else {
    credentials = grpc::InsecureServerCredentials();
  }
  int port = 0;
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), credentials, &port);
  // gRPC sets SO_REUSEPORT by default: a second server on the same port would start and
  // take half the connections (and, sharing a store, the first one's shards).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(absl::GetFlag(FLAGS_max_message_bytes)));
  builder.SetMaxSendMessageSize(static_cast<int>(absl::GetFlag(FLAGS_max_message_bytes)));
  builder.RegisterService(&model_service);
  builder.RegisterService(&job_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    LogError("listen_failed", {{"address", absl::GetFlag(FLAGS_listen)}});
    std::fprintf(stderr,
                 "hgeval-server: cannot listen on %s: the port is in use (another server?) or "
                 "the address is not this host's\n",
                 absl::GetFlag(FLAGS_listen).c_str());
    return 1;
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  auto set_health = [health](bool serving) {
    if (health == nullptr) return;
    health->SetServingStatus(serving);
    health->SetServingStatus("hgeval.v1.ModelService", serving);
    health->SetServingStatus("hgeval.v1.JobService", serving);
  };
  set_health(false);
  // The HTTP endpoint is a client of this very server over its in-process channel, so
  // every HTTP call passes the same handlers, checks and limits as a gRPC call.
  grpc::ChannelArguments http_channel_args;
  http_channel_args.SetMaxReceiveMessageSize(-1);
  http_channel_args.SetMaxSendMessageSize(-1);
  std::unique_ptr<hgeval::v1::ModelService::Stub> http_stub =
      hgeval::v1::ModelService::NewStub(server->InProcessChannel(http_channel_args));
  JsonLimits json_limits;
  json_limits.max_elements = absl::GetFlag(FLAGS_http_max_json_elements);
  CompletionsGateway completions(http_stub.get(), json_limits,
                                 absl::GetFlag(FLAGS_http_max_response_bytes));
  const std::vector<std::string> tokenizer_bos = absl::GetFlag(FLAGS_http_tokenizer_bos);
  RemoteTokenizerGateway tokenizer(
      http_stub.get(), json_limits,
      absl::flat_hash_set<std::string>(tokenizer_bos.begin(), tokenizer_bos.end()));
  HttpLimits http_limits;
  http_limits.max_body_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  http_limits.head_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_http_head_timeout_ms));
  http_limits.body_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_http_body_timeout_ms));
  http_limits.idle_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_http_idle_timeout_ms));
  http_limits.write_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_http_write_timeout_ms));
  http_limits.max_connections = std::max(1, absl::GetFlag(FLAGS_http_max_connections));
  http_limits.max_connections_per_client =
      std::max(1, absl::GetFlag(FLAGS_http_max_connections_per_client));
  // The results web UI (/ui) reads jobs over the same in-process channel.
  std::unique_ptr<hgeval::v1::JobService::Stub> http_job_stub =
      hgeval::v1::JobService::NewStub(server->InProcessChannel(http_channel_args));
  web::WebUiLimits web_ui_limits;
  web_ui_limits.max_response_bytes = absl::GetFlag(FLAGS_http_max_response_bytes);
  web::WebUi web_ui(http_job_stub.get(), &auth, web_ui_limits);
  OpenAiHttpServer http(&completions, &tokenizer, &auth, http_limits, &web_ui);
  if (!absl::GetFlag(FLAGS_http_listen).empty()) {
    absl::StatusOr<int> http_port = http.Start(absl::GetFlag(FLAGS_http_listen));
    if (!http_port.ok()) {
      LogError("http_listen_failed", {{"error", http_port.status().ToString()}});
      std::fprintf(stderr, "hgeval-server: %s\n",
                   std::string(http_port.status().message()).c_str());
      server->Shutdown();
      return 1;
    }
    WritePortFile(absl::GetFlag(FLAGS_http_port_file), *http_port);
    LogInfo("http_listening",
            {{"address", absl::GetFlag(FLAGS_http_listen)}, {"port", absl::StrCat(*http_port)}});
  }
  // Last, so that a waiter on --port_file finds --http_port_file written too.
  WritePortFile(absl::GetFlag(FLAGS_port_file), port);
  LogInfo("listening", {{"address", absl::GetFlag(FLAGS_listen)},
                        {"port", absl::StrCat(port)},
                        {"tls", tls ? "on" : "off"},
                        {"auth", auth.enabled() ? "bearer" : "off"},
                        {"store", RedactedStoreSpec(absl::GetFlag(FLAGS_store))}});
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);

  // Start-up: preload, resume jobs, then SERVING.
  const absl::Time start = absl::Now();
  std::vector<std::string> preload = absl::GetFlag(FLAGS_preload);
  if (preload.size() == 1 && preload[0] == "all") {
    preload.clear();
    for (const ModelSpec& spec : registry.List()) preload.push_back(spec.name);
  }
  for (const std::string& name : preload) {
    if (absl::StatusOr<LoadedModel*> m = registry.Get(name); !m.ok()) {
      LogError("preload_failed", {{"model", name}, {"error", m.status().ToString()}});
      server->Shutdown();
      return 1;
    }
  }
  const absl::Duration delay = absl::Milliseconds(absl::GetFlag(FLAGS_startup_delay_ms));
  while (absl::Now() - start < delay && g_signal == 0) absl::SleepFor(absl::Milliseconds(10));
  // Jobs start before anything is served: a jobs table that cannot be read (a damaged
  // store) would otherwise leave a server that accepts jobs and never runs them.
  std::string replica = absl::GetFlag(FLAGS_replica);
  if (replica.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "localhost");
    replica = absl::StrCat(host, ":", port);
  }
  jobs.set_replica(replica);
  if (absl::Status s = jobs.Start(); !s.ok()) {
    const std::string store_name = RedactedStoreSpec(absl::GetFlag(FLAGS_store));
    LogError("jobs_start_failed", {{"store", store_name}, {"error", s.ToString()}});
    if (IsPostgresStoreSpec(absl::GetFlag(FLAGS_store))) {
      std::fprintf(stderr, "hgeval-server: cannot read the jobs in --store %s: %s\n",
                   store_name.c_str(), std::string(s.message()).c_str());
      server->Shutdown();
      return 2;
    }
    // Only a damaged file gets the advice to move it aside: a read-only file, a full disk
    // or an I/O error leave a healthy file that such advice would discard.
    std::fprintf(stderr, "hgeval-server: cannot read the jobs in --store %s: %s\n%s",
                 absl::GetFlag(FLAGS_store).c_str(), std::string(s.message()).c_str(),
                 absl::IsDataLoss(s)
                     ? "The file is damaged. Move it aside to start with an empty store (stored "
                       "results are a cache and will be recomputed; unfinished jobs must be "
                       "resubmitted), or salvage it with: sqlite3 OLD '.recover' | sqlite3 NEW\n"
                     : "");
    server->Shutdown();
    return 2;
  }
  model_service.set_ready(true);
  job_service.set_ready(true);
  set_health(true);
  LogInfo("serving", {{"models", absl::StrCat(registry.List().size())}});

  while (g_signal == 0) absl::SleepFor(absl::Milliseconds(50));
  LogInfo("shutting_down", {{"signal", absl::StrCat(g_signal.load())},
                            {"inflight", absl::StrCat(model_service.inflight())}});
  // New calls are refused from now on; calls in flight get the grace period to finish,
  // then are cut short with UNAVAILABLE (their unfinished work is dropped, not waited for).
  set_health(false);
  model_service.set_ready(false);
  job_service.set_ready(false);
  // The HTTP listener closes now with its idle connections; its calls in flight finish
  // (or are cut short) with the gRPC ones.
  std::thread http_stopper([&http] { http.Stop(); });
  absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_shutdown_grace_ms)));
  if (model_service.inflight() > 0) {
    LogWarning("shutdown_grace_expired", {{"inflight", absl::StrCat(model_service.inflight())}});
    model_service.AbortInflight();
  }
  http_stopper.join();
  jobs.Stop();
  registry.StopSchedulers();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  LogInfo("stopped");
  return 0;
}

}  // namespace
}  // namespace hgeval::server

int main(int argc, char** argv) {
  const std::vector<std::string> positional = hgeval::cli::ParseCommandLine(
      argc, argv,
      "hgeval-server: serves language models over gRPC (hgeval.v1.ModelService, "
      "hgeval.v1.JobService, grpc.health.v1.Health, reflection) and, with --http_listen, "
      "OpenAI's completions API over HTTP.\n"
      "Example: hgeval-server --model_root=data/models --listen=127.0.0.1:50051 "
      "--http_listen=127.0.0.1:8000");
  if (!positional.empty()) {
    std::fprintf(stderr, "hgeval-server: unexpected argument '%s' (see --help)\n",
                 positional[0].c_str());
    return 2;
  }
  return hgeval::server::Run();
}
