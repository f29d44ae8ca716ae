// The Mersenne Twister MT19937 (Matsumoto & Nishimura's mt19937ar.c) with both of its
// seedings: the one generator under CPython's random.Random (metrics/python_random.h) and
// numpy's legacy RandomState (tasks/api/numpy_random.h), which differ only in how they seed it
// and what they draw from it.
#ifndef HGEVAL_METRICS_MT19937_H_
#define HGEVAL_METRICS_MT19937_H_

#include <array>
#include <cstdint>

#include "absl/types/span.h"

namespace hgeval::metrics {

class Mt19937 {
 public:
  // init_genrand(seed).
  static Mt19937 FromSeed(uint32_t seed);
  // init_by_array(key): CPython's seed(int) and numpy's seed(array). `key` is not empty.
  static Mt19937 FromKey(absl::Span<const uint32_t> key);

  // genrand_int32.
  uint32_t NextUint32();
  // genrand_res53: a double in [0, 1) from two draws (27 + 26 bits), as CPython's
  // random() and numpy's random_sample() compute it.
  double NextDouble53();

 private:
  static constexpr int kN = 624;
  Mt19937() = default;
  void Reload();

  std::array<uint32_t, kN> mt_{};
  int index_ = kN;
};

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_MT19937_H_
