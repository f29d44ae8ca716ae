// What every gRPC handler of the service does around its work: answers in the wire's
// status codes, controls the call (client cancel, deadline, the server's shutdown) and
// counts itself in flight while it runs.
#ifndef HGEVAL_SERVER_RPC_RPC_CALL_H_
#define HGEVAL_SERVER_RPC_RPC_CALL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "server/exec/executor.h"

namespace hgeval::server {

// The same code and message on the wire (gRPC's codes are Abseil's).
grpc::Status ToGrpcStatus(const absl::Status& status);

// CallControl for an RPC: cancelled when the client cancels; the call's deadline; ends
// with UNAVAILABLE once `server_stopping` is set (may be null).
CallControl ControlFor(grpc::ServerContext* context,
                       const std::atomic<bool>* server_stopping = nullptr);

// Counts a handler as in flight for its whole run (shutdown waits on the count).
class InflightCall {
 public:
  explicit InflightCall(std::atomic<int64_t>* count) : count_(count) { ++*count_; }
  ~InflightCall() { --*count_; }
  InflightCall(const InflightCall&) = delete;
  InflightCall& operator=(const InflightCall&) = delete;

 private:
  std::atomic<int64_t>* count_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_RPC_RPC_CALL_H_
