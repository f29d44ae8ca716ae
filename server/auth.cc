#include "server/auth.h"

#include <openssl/crypto.h>

#include <string_view>

#include "engine/util/sha256.h"

namespace hgeval::server {
namespace {

std::string RawSha256(std::string_view data) {
  const auto digest = Sha256Digest(data);
  return std::string(digest.begin(), digest.end());
}

}  // namespace

BearerAuth::BearerAuth(std::string token) {
  if (!token.empty()) expected_digest_ = RawSha256("Bearer " + token);
}

grpc::Status BearerAuth::Check(const grpc::ServerContext& context) const {
  if (!enabled()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return CheckValue(nullptr);
  const std::string_view value(it->second.data(), it->second.size());
  return CheckValue(&value);
}

grpc::Status BearerAuth::CheckValue(const std::string_view* authorization) const {
  if (!enabled()) return grpc::Status::OK;
  if (authorization == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing bearer token: send metadata 'authorization: Bearer <token>'");
  }
  const std::string given = RawSha256(*authorization);
  if (CRYPTO_memcmp(given.data(), expected_digest_.data(), expected_digest_.size()) != 0) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
  }
  return grpc::Status::OK;
}

}  // namespace hgeval::server
