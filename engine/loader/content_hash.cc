#include "engine/loader/content_hash.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace hgeval {
namespace {

static_assert(std::endian::native == std::endian::little,
              "ContentHasher reads words as little-endian; add a byte swap for this target");

constexpr uint64_t kMulA = 0xa24baed4963ee407ull;
constexpr uint64_t kMulB = 0x9fb21c651e98df25ull;
constexpr uint64_t kMulC = 0xc13fa9a902a6328full;

inline uint64_t Load64(const uint8_t* p) {
  uint64_t value;
  std::memcpy(&value, p, sizeof(value));
  return value;
}

inline uint64_t MixWord(uint64_t lane, uint64_t word) {
  return std::rotl(lane ^ (word * kMulA), 29) * kMulB;
}

// Avalanche: every input bit affects every output bit.
inline uint64_t Finalize(uint64_t x) {
  x ^= x >> 32;
  x *= kMulC;
  x ^= x >> 29;
  x *= kMulB;
  x ^= x >> 32;
  return x;
}

}  // namespace

ContentHasher::ContentHasher()
    : lanes_{0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull,
             0x082efa98ec4e6c89ull} {}

void ContentHasher::ConsumeBlock(const uint8_t* block) {
  lanes_[0] = MixWord(lanes_[0], Load64(block));
  lanes_[1] = MixWord(lanes_[1], Load64(block + 8));
  lanes_[2] = MixWord(lanes_[2], Load64(block + 16));
  lanes_[3] = MixWord(lanes_[3], Load64(block + 24));
}

void ContentHasher::Update(const void* data, size_t size) {
  if (size == 0) return;  // `data` may be null then
  const auto* bytes = static_cast<const uint8_t*>(data);
  total_size_ += size;
  if (pending_size_ > 0) {
    const size_t take = std::min(size, pending_.size() - pending_size_);
    std::memcpy(pending_.data() + pending_size_, bytes, take);
    pending_size_ += take;
    bytes += take;
    size -= take;
    if (pending_size_ < pending_.size()) return;
    ConsumeBlock(pending_.data());
    pending_size_ = 0;
  }
  // Four independent lanes keep the multipliers busy: several GB/s on one core.
  while (size >= 32) {
    ConsumeBlock(bytes);
    bytes += 32;
    size -= 32;
  }
  if (size > 0) {
    std::memcpy(pending_.data(), bytes, size);
    pending_size_ = size;
  }
}

void ContentHasher::UpdateU64(uint64_t value) {
  uint8_t bytes[8];
  std::memcpy(bytes, &value, sizeof(bytes));
  Update(bytes, sizeof(bytes));
}

std::string ContentHasher::HexDigest() const {
  std::array<uint64_t, 4> lanes = lanes_;
  std::array<uint8_t, 32> tail{};
  std::memcpy(tail.data(), pending_.data(), pending_size_);
  // The tail is zero-padded; the total length (mixed below) tells paddings apart.
  for (int i = 0; i < 4; ++i) lanes[i] = MixWord(lanes[i], Load64(tail.data() + 8 * i));
  const uint64_t high =
      Finalize(lanes[0] * kMulA + std::rotl(lanes[1], 7) + std::rotl(lanes[2], 12) * kMulB +
               std::rotl(lanes[3], 18) + total_size_);
  const uint64_t low =
      Finalize(high ^ (lanes[3] * kMulA + std::rotl(lanes[2], 11) +
                       std::rotl(lanes[1], 25) * kMulB + lanes[0] + (total_size_ * kMulC)));
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = kHex[(high >> (60 - 4 * i)) & 0xf];
    out[16 + i] = kHex[(low >> (60 - 4 * i)) & 0xf];
  }
  return out;
}

}  // namespace hgeval
