#include "server/sha256.h"

#include <openssl/evp.h>

#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace hgeval::server {
namespace {

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

std::string Finish(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx, digest, &size);
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  MdCtx ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx.get(), data.data(), data.size());
  return Finish(ctx.get());
}

}  // namespace hgeval::server
