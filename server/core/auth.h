// Optional bearer-token authentication: calls must carry metadata
// `authorization: Bearer <token>`. The comparison is constant-time (SHA-256 of both
// sides, compared with CRYPTO_memcmp) so timing reveals nothing about the token.
#ifndef HGEVAL_SERVER_CORE_AUTH_H_
#define HGEVAL_SERVER_CORE_AUTH_H_

#include <grpcpp/server_context.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace hgeval::server {

// OK when every byte of `token` is visible ASCII (0x21..0x7E), what a client can send
// in an `authorization` header or gRPC metadata value; INVALID_ARGUMENT naming the first
// other byte's offset otherwise (a token no client could send locks everyone out).
absl::Status ValidateBearerToken(std::string_view token);

class BearerAuth {
 public:
  // An empty token disables authentication.
  explicit BearerAuth(const std::string& token);
  bool enabled() const { return !expected_digest_.empty(); }
  // OK, or UNAUTHENTICATED saying whether the token was missing or wrong (a synchronous or
  // a callback call).
  grpc::Status Check(const grpc::ServerContextBase& context) const;
  // The same for an `authorization` value (HTTP's header); nullptr: none was sent.
  grpc::Status CheckValue(const std::string_view* authorization) const;

 private:
  std::string expected_digest_;  // raw SHA-256 of the expected header value
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_CORE_AUTH_H_
