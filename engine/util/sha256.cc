#include "engine/util/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/escaping.h"

namespace hgeval {
namespace {

// libcrypto fails here only when it cannot allocate or has no SHA-256 provider loaded
// (a broken install). No hash can be trusted then and callers use digests as keys, so
// stop loudly rather than hand back a wrong one.
void RequireOk(int ok, const char* what) {
  if (ok == 1) return;
  std::fprintf(stderr, "hgeval: libcrypto SHA-256 failed in %s\n", what);
  std::abort();
}

}  // namespace

void Sha256::ContextDeleter::operator()(evp_md_ctx_st* context) const { EVP_MD_CTX_free(context); }

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
  RequireOk(context_ != nullptr, "EVP_MD_CTX_new");
  RequireOk(EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

void Sha256::Update(std::string_view data) {
  RequireOk(EVP_DigestUpdate(context_.get(), data.data(), data.size()), "EVP_DigestUpdate");
}

std::array<uint8_t, Sha256::kDigestSize> Sha256::Digest() {
  std::array<uint8_t, kDigestSize> digest;
  unsigned int size = 0;
  RequireOk(EVP_DigestFinal_ex(context_.get(), digest.data(), &size), "EVP_DigestFinal_ex");
  RequireOk(size == kDigestSize, "EVP_DigestFinal_ex (digest size)");
  return digest;
}

std::string Sha256::HexDigest() {
  const std::array<uint8_t, kDigestSize> digest = Digest();
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::array<uint8_t, Sha256::kDigestSize> Sha256Digest(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.Digest();
}

std::string Sha256Hex(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.HexDigest();
}

}  // namespace hgeval
