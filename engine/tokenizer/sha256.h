// SHA-256 (FIPS 180-4), used for stable content digests of tokenizer files.
#ifndef HGEVAL_ENGINE_TOKENIZER_SHA256_H_
#define HGEVAL_ENGINE_TOKENIZER_SHA256_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace hgeval {

class Sha256 {
 public:
  Sha256();
  void Update(std::string_view data);
  // Finishes the digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Digest();
  std::string HexDigest();

 private:
  void Compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_TOKENIZER_SHA256_H_
