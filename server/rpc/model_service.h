// hgeval.v1.ModelService: validates requests, runs them through the Executor (result
// store + the model's scheduler) and maps every failure to the wire contract's codes.
// Generate's pieces have files of their own: the call checked and tokenized
// (generate_request), the tokens streamed back (generation_stream).
#ifndef HGEVAL_SERVER_RPC_MODEL_SERVICE_H_
#define HGEVAL_SERVER_RPC_MODEL_SERVICE_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "hgeval/v1/models.grpc.pb.h"
#include "server/core/auth.h"
#include "server/exec/executor.h"
#include "server/exec/model_registry.h"
#include "server/rpc/rpc_call.h"
#include "server/rpc/service_limits.h"

namespace hgeval::server {

class ModelServiceImpl final : public hgeval::v1::ModelService::Service {
 public:
  ModelServiceImpl(ModelRegistry* registry, Executor* executor, const BearerAuth* auth,
                   ServiceLimits limits)
      : registry_(registry), executor_(executor), auth_(auth), limits_(limits) {}

  grpc::Status ListModels(grpc::ServerContext* context,
                          const hgeval::v1::ListModelsRequest* request,
                          hgeval::v1::ListModelsResponse* response) override;
  grpc::Status Tokenize(grpc::ServerContext* context, const hgeval::v1::TokenizeRequest* request,
                        hgeval::v1::TokenizeResponse* response) override;
  grpc::Status Detokenize(grpc::ServerContext* context,
                          const hgeval::v1::DetokenizeRequest* request,
                          hgeval::v1::DetokenizeResponse* response) override;
  grpc::Status Loglikelihood(grpc::ServerContext* context,
                             const hgeval::v1::LoglikelihoodRequest* request,
                             hgeval::v1::LoglikelihoodResponse* response) override;
  grpc::Status LoglikelihoodRolling(grpc::ServerContext* context,
                                    const hgeval::v1::LoglikelihoodRollingRequest* request,
                                    hgeval::v1::LoglikelihoodRollingResponse* response) override;
  grpc::Status Generate(grpc::ServerContext* context, const hgeval::v1::GenerateRequest* request,
                        grpc::ServerWriter<hgeval::v1::GenerateResponse>* writer) override;
  grpc::Status Classify(grpc::ServerContext* context, const hgeval::v1::ClassifyRequest* request,
                        hgeval::v1::ClassifyResponse* response) override;

  // While not ready, every call fails with UNAVAILABLE (start-up and shutdown).
  void set_ready(bool ready) { ready_ = ready; }
  // Calls admitted and not yet returned.
  int64_t inflight() const { return inflight_.load(); }
  // Ends the shutdown grace: every call still waiting on the model returns UNAVAILABLE
  // within milliseconds, and work nobody waits for any more is dropped.
  void AbortInflight() { stopping_ = true; }

 private:
  grpc::Status Admit(grpc::ServerContext* context) const;
  // RESOURCE_EXHAUSTED when a call carries more than max_request_bytes: every byte of the
  // message counts (texts, stop strings, names, ids, every repeated field).
  grpc::Status CheckRequestBytes(const google::protobuf::MessageLite& request) const;
  CallControl Control(grpc::ServerContext* context) const;
  // A language model (the LM RPCs); FAILED_PRECONDITION for an LRA classifier.
  absl::StatusOr<LoadedModel*> FindModel(const std::string& name);
  // Any model, language model or LRA classifier.
  absl::StatusOr<LoadedModel*> FindAnyModel(const std::string& name);

  ModelRegistry* registry_;
  Executor* executor_;
  const BearerAuth* auth_;
  const ServiceLimits limits_;
  std::atomic<bool> ready_{false};
  std::atomic<int64_t> inflight_{0};
  std::atomic<bool> stopping_{false};
};

// Fills the wire description of a loaded model.
void FillModelInfo(const LoadedModel& model, hgeval::v1::ModelInfo* info);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_RPC_MODEL_SERVICE_H_
