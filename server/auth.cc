#include "server/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <string_view>

namespace hgeval::server {
namespace {

std::string RawSha256(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

}  // namespace

BearerAuth::BearerAuth(std::string token) {
  if (!token.empty()) expected_digest_ = RawSha256("Bearer " + token);
}

grpc::Status BearerAuth::Check(const grpc::ServerContext& context) const {
  if (!enabled()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing bearer token: send metadata 'authorization: Bearer <token>'");
  }
  const std::string given = RawSha256(std::string_view(it->second.data(), it->second.size()));
  if (CRYPTO_memcmp(given.data(), expected_digest_.data(), expected_digest_.size()) != 0) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid bearer token");
  }
  return grpc::Status::OK;
}

}  // namespace hgeval::server
