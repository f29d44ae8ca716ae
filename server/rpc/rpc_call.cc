#include "server/rpc/rpc_call.h"

#include <chrono>
#include <string>

#include "absl/time/clock.h"

namespace hgeval::server {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

CallControl ControlFor(grpc::ServerContext* context, const std::atomic<bool>* server_stopping) {
  CallControl control;
  control.server_stopping = server_stopping;
  control.cancelled = [context] { return context->IsCancelled(); };
  const auto deadline = context->deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    control.deadline = absl::FromChrono(deadline);
  }
  return control;
}

}  // namespace hgeval::server
