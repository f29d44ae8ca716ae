#include "metrics/python_random.h"

#include <cmath>
#include <vector>

namespace hgeval::metrics {
namespace {

// CPython's init_by_array key of a non-negative int: its 32-bit little-endian words.
std::vector<uint32_t> SeedWords(uint64_t seed) {
  std::vector<uint32_t> key;
  do {
    key.push_back(static_cast<uint32_t>(seed & 0xffffffffU));
    seed >>= 32;
  } while (seed != 0);
  return key;
}

}  // namespace

PythonRandom::PythonRandom(uint64_t seed) : mt_(Mt19937::FromKey(SeedWords(seed))) {}

double PythonRandom::Random() { return mt_.NextDouble53(); }

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
