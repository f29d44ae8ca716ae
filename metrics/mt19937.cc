#include "metrics/mt19937.h"

#include <algorithm>

namespace hgeval::metrics {
namespace {
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;
}  // namespace

Mt19937 Mt19937::FromSeed(uint32_t seed) {
  Mt19937 g;
  g.mt_[0] = seed;
  for (int i = 1; i < kN; ++i) {
    g.mt_[i] = 1812433253U * (g.mt_[i - 1] ^ (g.mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  return g;
}

Mt19937 Mt19937::FromKey(absl::Span<const uint32_t> key) {
  Mt19937 g = FromSeed(19650218U);
  auto& mt = g.mt_;
  int i = 1;
  size_t j = 0;
  for (size_t k = std::max<size_t>(kN, key.size()); k > 0; --k) {
    mt[i] =
        (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525U)) + key[j] + static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt[0] = mt[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt[0] = mt[kN - 1];
      i = 1;
    }
  }
  mt[0] = 0x80000000U;  // a non-zero initial state
  return g;
}

void Mt19937::Reload() {
  auto twist = [](uint32_t upper, uint32_t lower) {
    const uint32_t y = (upper & kUpperMask) | (lower & kLowerMask);
    return (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
  };
  int kk = 0;
  for (; kk < kN - kM; ++kk) mt_[kk] = mt_[kk + kM] ^ twist(mt_[kk], mt_[kk + 1]);
  for (; kk < kN - 1; ++kk) mt_[kk] = mt_[kk + (kM - kN)] ^ twist(mt_[kk], mt_[kk + 1]);
  mt_[kN - 1] = mt_[kM - 1] ^ twist(mt_[kN - 1], mt_[0]);
  index_ = 0;
}

uint32_t Mt19937::NextUint32() {
  if (index_ >= kN) Reload();
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= y >> 18;
  return y;
}

double Mt19937::NextDouble53() {
  const uint32_t a = NextUint32() >> 5;
  const uint32_t b = NextUint32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

}  // namespace hgeval::metrics
