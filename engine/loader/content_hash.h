// A fast, stable 128-bit non-cryptographic hash for checkpoint identity (the result store's
// model key). The byte order of the input is all that matters: the same bytes give the same
// digest on every run and every (little-endian) machine.
#ifndef HGEVAL_ENGINE_LOADER_CONTENT_HASH_H_
#define HGEVAL_ENGINE_LOADER_CONTENT_HASH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hgeval {

class ContentHasher {
 public:
  ContentHasher();
  void Update(const void* data, size_t size);
  void Update(std::string_view text) { Update(text.data(), text.size()); }
  // Hashes the value's 8 little-endian bytes.
  void UpdateU64(uint64_t value);
  // 32 lowercase hex characters. Does not change the state.
  std::string HexDigest() const;

 private:
  void ConsumeBlock(const uint8_t* block);

  std::array<uint64_t, 4> lanes_;
  std::array<uint8_t, 32> pending_{};
  size_t pending_size_ = 0;
  uint64_t total_size_ = 0;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_CONTENT_HASH_H_
