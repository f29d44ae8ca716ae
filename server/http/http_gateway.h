// What hgeval-server's HTTP endpoints (server/http/openai_http_server.h) share: errors in
// OpenAI's JSON shape, and calls into the gRPC service over its in-process channel that
// carry the HTTP Authorization header as the call's metadata, so the service's own bearer
// check applies.
#ifndef HGEVAL_SERVER_HTTP_HTTP_GATEWAY_H_
#define HGEVAL_SERVER_HTTP_HTTP_GATEWAY_H_

#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace hgeval::server {

// Bounds on parsing a request body: nlohmann's DOM costs tens of bytes per value and a
// deep nesting costs stack, so a body within --max_message_bytes could still take a GiB.
struct JsonLimits {
  int64_t max_elements = 1 << 21;  // values (scalars, arrays, objects) in the document
  int max_depth = 64;
};
// Parses a request body under `limits`. INVALID_ARGUMENT for malformed JSON or invalid
// UTF-8, RESOURCE_EXHAUSTED past a limit (nothing beyond it is allocated).
absl::StatusOr<nlohmann::ordered_json> ParseJsonBody(std::string_view text,
                                                     const JsonLimits& limits);

// INVALID_ARGUMENT about a field of a request body; the field becomes OpenAI's `param`.
absl::Status FieldError(const std::string& param, const std::string& message);
// The model of a request whose path may name it (/models/<name>/..., `path_model`) and
// whose body or query may too (`named`): the path's, which `named` must equal when given;
// else `named` (may be empty: the server's only model).
absl::StatusOr<std::string> ScopedModel(const std::string& path_model, const std::string& named);
// The field a status from FieldError names, if any.
std::optional<std::string> ErrorParam(const absl::Status& status);

// An error as the HTTP status and OpenAI's body {"error": {"message", "type", "param",
// "code"}} (the mapping is tabled in docs/service.md).
struct HttpError {
  int http_status = 500;
  std::string body;
};
HttpError ToHttpError(const absl::Status& status);

// Appends a JSON array of token ids to `ids`; false when an element is not an integer.
// Integers outside int32 are outside every vocabulary: they become -1, which the RPCs
// report with the position.
bool AppendTokenIds(const nlohmann::ordered_json& array, std::vector<int32_t>* ids);

// UNAUTHENTICATED for an Authorization header gRPC cannot carry as metadata (it aborts the
// process on values outside printable ASCII), as the service answers a wrong token.
absl::Status CheckAuthorizationHeader(const std::string& authorization);
// A call context carrying `authorization` (the HTTP header's value; empty: none).
std::unique_ptr<grpc::ClientContext> NewCallContext(const std::string& authorization);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_HTTP_HTTP_GATEWAY_H_
