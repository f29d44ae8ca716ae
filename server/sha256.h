// SHA-256 digests (OpenSSL) for the result store's keys and row checksums.
#ifndef HGEVAL_SERVER_SHA256_H_
#define HGEVAL_SERVER_SHA256_H_

#include <string>
#include <string_view>

namespace hgeval::server {

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_SHA256_H_
