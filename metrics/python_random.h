// CPython's random.Random (metrics/mt19937.h with CPython's integer seeding, random()
// and choices()), reproduced bit for bit so that lm-eval's bootstrap stderr, which seeds
// random.Random(i) per chunk, gives the same numbers here.
#ifndef HGEVAL_METRICS_PYTHON_RANDOM_H_
#define HGEVAL_METRICS_PYTHON_RANDOM_H_

#include <cstdint>

#include "metrics/mt19937.h"

namespace hgeval::metrics {

class PythonRandom {
 public:
  // random.Random(); seed(seed) with a non-negative int (init_by_array on its 32-bit
  // little-endian words).
  explicit PythonRandom(uint64_t seed);

  uint32_t NextUint32() { return mt_.NextUint32(); }  // genrand_uint32
  // random.random(): 53-bit float in [0, 1).
  double Random();
  // One index of random.choices(population of size n): floor(random() * n).
  int64_t ChoiceIndex(int64_t n);
  // random.getrandbits(k) for 1 <= k <= 32.
  uint32_t GetRandBits(int k);
  // random._randbelow(n) for 1 <= n < 2^32 (getrandbits(n.bit_length()) until below n):
  // what random.choice(seq) (n = len(seq)) and random.randint draw.
  uint32_t RandBelow(uint32_t n);
  // random.randint(a, b), a <= b, b - a < 2^32 - 1.
  int64_t RandInt(int64_t a, int64_t b);

 private:
  Mt19937 mt_;
};

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_PYTHON_RANDOM_H_
