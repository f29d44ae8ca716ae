// SHA-256 digests (OpenSSL) for the result store's keys and model content hashes.
#ifndef HGEVAL_SERVER_SHA256_H_
#define HGEVAL_SERVER_SHA256_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::server {

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

// Hex SHA-256 over the files in order: each file contributes its base name and its own
// digest, so renaming or reordering shards changes the hash.
absl::StatusOr<std::string> Sha256OfFiles(const std::vector<std::string>& paths);

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_SHA256_H_
