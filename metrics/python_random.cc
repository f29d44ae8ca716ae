#include "metrics/python_random.h"

#include <cmath>
#include <vector>

namespace hgeval::metrics {
namespace {
constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfU;
constexpr uint32_t kUpperMask = 0x80000000U;
constexpr uint32_t kLowerMask = 0x7fffffffU;
}  // namespace

PythonRandom::PythonRandom(uint64_t seed) {
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(seed & 0xffffffffU));
    seed >>= 32;
  } while (seed != 0);
  // init_genrand(19650218)
  mt_[0] = 19650218U;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  // init_by_array
  int i = 1;
  size_t j = 0;
  for (size_t k = (kN > key.size() ? kN : key.size()); k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= key.size()) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt_[i] =
        (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) - static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;
  index_ = kN;
}

uint32_t PythonRandom::NextUint32() {
  if (index_ >= kN) {
    int kk = 0;
    for (; kk < kN - kM; ++kk) {
      uint32_t y = (mt_[kk] & kUpperMask) | (mt_[kk + 1] & kLowerMask);
      mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    }
    for (; kk < kN - 1; ++kk) {
      uint32_t y = (mt_[kk] & kUpperMask) | (mt_[kk + 1] & kLowerMask);
      mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    }
    uint32_t y = (mt_[kN - 1] & kUpperMask) | (mt_[0] & kLowerMask);
    mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ ((y & 1U) ? kMatrixA : 0U);
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

double PythonRandom::Random() {
  uint32_t a = NextUint32() >> 5;
  uint32_t b = NextUint32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

int64_t PythonRandom::ChoiceIndex(int64_t n) {
  return static_cast<int64_t>(std::floor(Random() * static_cast<double>(n)));
}

uint32_t PythonRandom::GetRandBits(int k) { return NextUint32() >> (32 - k); }

uint32_t PythonRandom::RandBelow(uint32_t n) {
  int k = 0;
  while (k < 32 && (n >> k) != 0) ++k;  // n.bit_length()
  uint32_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

int64_t PythonRandom::RandInt(int64_t a, int64_t b) {
  return a + static_cast<int64_t>(RandBelow(static_cast<uint32_t>(b - a + 1)));
}

}  // namespace hgeval::metrics
