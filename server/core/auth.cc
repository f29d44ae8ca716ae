#include "server/core/auth.h"

#include <openssl/crypto.h>

#include <string_view>

#include "absl/strings/str_cat.h"
#include "engine/util/sha256.h"

namespace hgeval::server {
namespace {

std::string RawSha256(std::string_view data) {
  const auto digest = Sha256Digest(data);
  return std::string(digest.begin(), digest.end());
}

}  // namespace

absl::Status ValidateBearerToken(std::string_view token) {
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the token holds byte 0x", absl::Hex(c, absl::kZeroPad2), " at offset ", i,
          "; a bearer token is visible ASCII (no spaces, control or non-ASCII bytes), as "
          "clients send it in a header"));
    }
  }
  return absl::OkStatus();
}

BearerAuth::BearerAuth(const std::string& token) {
  if (!token.empty()) expected_digest_ = RawSha256("Bearer " + token);
}

grpc::Status BearerAuth::Check(const grpc::ServerContextBase& context) const {
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
