#include "server/sha256.h"

#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
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
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), size));
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  MdCtx ctx(EVP_MD_CTX_new());
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(ctx.get(), data.data(), data.size());
  return Finish(ctx.get());
}

absl::StatusOr<std::string> Sha256OfFiles(const std::vector<std::string>& paths) {
  std::string manifest;
  std::vector<char> buffer(1 << 20);
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
    MdCtx ctx(EVP_MD_CTX_new());
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(in.gcount()));
    }
    absl::StrAppend(&manifest, std::filesystem::path(path).filename().string(), " ",
                    Finish(ctx.get()), "\n");
  }
  return Sha256Hex(manifest);
}

}  // namespace hgeval::server
