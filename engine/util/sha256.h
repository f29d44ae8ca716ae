// SHA-256 over libcrypto's EVP interface: the one digest behind tokenizer content hashes,
// result-store keys and bearer-token checks (all of them are store keys or compared to
// stored values, so every caller must agree on the bytes).
#ifndef HGEVAL_ENGINE_UTIL_SHA256_H_
#define HGEVAL_ENGINE_UTIL_SHA256_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // libcrypto's EVP_MD_CTX, kept out of this header.

namespace hgeval {

// Streaming SHA-256: Update() any number of times, then one Digest() or HexDigest().
class Sha256 {
 public:
  static constexpr size_t kDigestSize = 32;

  Sha256();
  Sha256(Sha256&&) noexcept = default;
  Sha256& operator=(Sha256&&) noexcept = default;

  void Update(std::string_view data);
  // Finishes the digest; the object must not be updated afterwards.
  std::array<uint8_t, kDigestSize> Digest();
  // Lower-case hex of Digest().
  std::string HexDigest();

 private:
  struct ContextDeleter {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, ContextDeleter> context_;
};

// One-shot forms.
std::array<uint8_t, Sha256::kDigestSize> Sha256Digest(std::string_view data);
std::string Sha256Hex(std::string_view data);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_UTIL_SHA256_H_
