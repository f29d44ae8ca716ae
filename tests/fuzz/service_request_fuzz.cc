// libFuzzer target: requests from an untrusted client into the gRPC service handlers, in
// process. The first byte picks the method (9: WatchJob); the rest is the request message, as
// binary protobuf or, when the byte's top bit is set, as text format (so the dictionary's field
// names reach every field). Calls go through a real grpc::Server over its in-process
// channel: the handlers, the registry, the scheduler, the executor and the result store
// (':memory:') all run as in hgeval-server, with the golden HGRN2 checkpoint and the tok512
// tokenizer, and limits small enough that any accepted request finishes quickly. The job
// runner is not started (a submitted job is validated and stored, not run).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "hgeval/v1/jobs.grpc.pb.h"
#include "hgeval/v1/models.grpc.pb.h"
#include "server/core/auth.h"
#include "server/core/log.h"
#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "server/jobs/job_manager.h"
#include "server/rpc/job_service.h"
#include "server/rpc/model_service.h"
#include "server/store/result_store.h"

namespace {

namespace v1 = ::hgeval::v1;
using hgeval::server::BearerAuth;
using hgeval::server::Executor;
using hgeval::server::JobManager;
using hgeval::server::JobManagerOptions;
using hgeval::server::JobServiceImpl;
using hgeval::server::ModelRegistry;
using hgeval::server::ModelServiceImpl;
using hgeval::server::ModelSpec;
using hgeval::server::RegistryOptions;
using hgeval::server::ResultStore;
using hgeval::server::ServiceLimits;

std::string SourceDir() {
  const char* dir = std::getenv("HGEVAL_SOURCE_DIR");
  return dir != nullptr ? dir : HGEVAL_SOURCE_DIR_DEFAULT;
}

// Everything a server holds, built once per process.
struct InProcessServer {
  InProcessServer() {
    hgeval::server::SetLoggingEnabled(false);
    RegistryOptions options;
    ModelSpec spec;
    spec.name = "hgrn2";
    spec.path = SourceDir() + "/tests/golden/hgrn2";
    spec.tokenizer = SourceDir() + "/data/models/stories260K/tok512.bin";
    options.models.push_back(spec);
    options.max_sequence_tokens = 128;
    options.threads = 1;
    store = *ResultStore::Open(":memory:");
    registry = std::make_unique<ModelRegistry>(options);
    if (!registry->Get("hgrn2").ok()) std::abort();  // the fixture must load
    executor = std::make_unique<Executor>(store.get());
    auth = std::make_unique<BearerAuth>("");
    ServiceLimits limits;
    limits.max_request_pairs = 16;
    limits.max_request_tokens = 2048;
    limits.max_request_bytes = 64 << 10;
    limits.max_generate_tokens = 8;
    models = std::make_unique<ModelServiceImpl>(registry.get(), executor.get(), auth.get(), limits);
    JobManagerOptions job_options;
    job_options.data_dir = SourceDir() + "/data";
    jobs = std::make_unique<JobManager>(store.get(), registry.get(), executor.get(), job_options);
    job_service = std::make_unique<JobServiceImpl>(jobs.get(), auth.get());
    models->set_ready(true);
    job_service->set_ready(true);
    grpc::ServerBuilder builder;
    builder.RegisterService(models.get());
    builder.RegisterService(job_service.get());
    server = builder.BuildAndStart();
    channel = server->InProcessChannel(grpc::ChannelArguments());
    model_stub = v1::ModelService::NewStub(channel);
    job_stub = v1::JobService::NewStub(channel);
  }

  std::unique_ptr<ResultStore> store;
  std::unique_ptr<ModelRegistry> registry;
  std::unique_ptr<Executor> executor;
  std::unique_ptr<BearerAuth> auth;
  std::unique_ptr<ModelServiceImpl> models;
  std::unique_ptr<JobManager> jobs;
  std::unique_ptr<JobServiceImpl> job_service;
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::ModelService::Stub> model_stub;
  std::unique_ptr<v1::JobService::Stub> job_stub;
};

// Parses `bytes` into `message` as binary or text format; false if it does not parse.
bool Parse(const std::string& bytes, bool text, google::protobuf::Message* message) {
  if (!text) return message->ParseFromString(bytes);
  google::protobuf::TextFormat::Parser parser;
  parser.AllowPartialMessage(true);
  return parser.ParseFromString(bytes, message);
}

// Every call gets a deadline: nothing the fuzzer sends may keep the server busy for long.
void Prepare(grpc::ClientContext& context) {
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
}

// A call the server answers with INTERNAL or UNKNOWN is a defect (an unmapped failure or
// an escaped exception), as is a crash.
void Check(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::INTERNAL ||
      status.error_code() == grpc::StatusCode::UNKNOWN) {
    std::fprintf(stderr, "server answered %d: %s\n", status.error_code(),
                 status.error_message().c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static InProcessServer* const server = new InProcessServer();
  if (size < 1) return 0;
  const uint8_t selector = data[0];
  const bool text = (selector & 0x80) != 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  grpc::ClientContext context;
  Prepare(context);
  switch (selector & 0x7f) {
    case 0: {
      v1::TokenizeRequest request;
      v1::TokenizeResponse response;
      if (!Parse(body, text, &request)) return 0;
      Check(server->model_stub->Tokenize(&context, request, &response));
      break;
    }
    case 1: {
      v1::LoglikelihoodRequest request;
      v1::LoglikelihoodResponse response;
      if (!Parse(body, text, &request)) return 0;
      Check(server->model_stub->Loglikelihood(&context, request, &response));
      break;
    }
    case 2: {
      v1::LoglikelihoodRollingRequest request;
      v1::LoglikelihoodRollingResponse response;
      if (!Parse(body, text, &request)) return 0;
      Check(server->model_stub->LoglikelihoodRolling(&context, request, &response));
      break;
    }
    case 3: {
      v1::GenerateRequest request;
      if (!Parse(body, text, &request)) return 0;
      auto reader = server->model_stub->Generate(&context, request);
      v1::GenerateResponse chunk;
      while (reader->Read(&chunk)) {
      }
      Check(reader->Finish());
      break;
    }
    case 4: {
      v1::SubmitJobRequest request;
      v1::SubmitJobResponse response;
      if (!Parse(body, text, &request)) return 0;
      Check(server->job_stub->SubmitJob(&context, request, &response));
      break;
    }
    case 5: {
      v1::GetJobRequest request;
      v1::Job response;
      if (!Parse(body, text, &request)) return 0;
      Check(server->job_stub->GetJob(&context, request, &response));
      break;
    }
    case 6: {
      v1::ListJobsRequest request;
      v1::ListJobsResponse response;
      if (!Parse(body, text, &request)) return 0;
      Check(server->job_stub->ListJobs(&context, request, &response));
      break;
    }
    case 7: {
      v1::CancelJobRequest request;
      v1::Job response;
      if (!Parse(body, text, &request)) return 0;
      Check(server->job_stub->CancelJob(&context, request, &response));
      break;
    }
    case 9: {
      // One update of the stream, then the client goes away. An empty job_id watches the
      // newest job (the fuzzer cannot guess ids), so the update path is reached.
      v1::WatchJobRequest request;
      if (!Parse(body, text, &request)) return 0;
      if (request.job_id().empty()) {
        grpc::ClientContext list_context;
        Prepare(list_context);
        v1::ListJobsRequest list;
        list.set_limit(1);
        v1::ListJobsResponse listed;
        if (server->job_stub->ListJobs(&list_context, list, &listed).ok() &&
            listed.jobs_size() > 0) {
          request.set_job_id(listed.jobs(0).id());
        }
      }
      auto reader = server->job_stub->WatchJob(&context, request);
      v1::Job update;
      reader->Read(&update);
      context.TryCancel();
      Check(reader->Finish());
      break;
    }
    default: {
      v1::ListModelsRequest request;
      v1::ListModelsResponse response;
      Check(server->model_stub->ListModels(&context, request, &response));
      break;
    }
  }
  return 0;
}
