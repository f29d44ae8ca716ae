#include "tasks/api/numpy_random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hgeval::tasks {
namespace {

// Smallest all-ones bit mask covering `max`.
uint64_t CoveringMask(uint64_t max) {
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  return mask;
}

// The cumulative sum normalised by its last entry (numpy: cdf = cumsum(p); cdf /= cdf[-1]).
std::vector<double> NormalisedCdf(const std::vector<double>& p) {
  std::vector<double> cdf(p.size());
  double running = 0.0;
  for (size_t i = 0; i < p.size(); ++i) {
    running += p[i];
    cdf[i] = running;
  }
  const double last = cdf.back();
  for (double& c : cdf) c /= last;
  return cdf;
}

// searchsorted(cdf, x, side='right'): the first index whose entry exceeds x.
int64_t SearchSortedRight(const std::vector<double>& cdf, double x) {
  return std::upper_bound(cdf.begin(), cdf.end(), x) - cdf.begin();
}

double KahanSum(absl::Span<const double> values) {
  if (values.empty()) return 0.0;
  double sum = values[0];
  double compensation = 0.0;
  for (size_t i = 1; i < values.size(); ++i) {
    const double y = values[i] - compensation;
    const double t = sum + y;
    compensation = (t - sum) - y;
    sum = t;
  }
  return sum;
}

}  // namespace

NumpyRandomState::NumpyRandomState(uint32_t seed) : mt_(metrics::Mt19937::FromSeed(seed)) {}

NumpyRandomState NumpyRandomState::FromSeedArray(absl::Span<const uint32_t> init_key) {
  return NumpyRandomState(metrics::Mt19937::FromKey(init_key));
}

double NumpyRandomState::RandomSample() { return mt_.NextDouble53(); }

std::vector<double> NumpyRandomState::RandomSample(int64_t n) {
  std::vector<double> out(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (double& x : out) x = RandomSample();
  return out;
}

uint32_t NumpyRandomState::RandomInterval(uint32_t max) {
  if (max == 0) return 0;
  const uint32_t mask = static_cast<uint32_t>(CoveringMask(max));
  uint32_t value;
  do {
    value = NextUint32() & mask;
  } while (value > max);
  return value;
}

absl::StatusOr<std::vector<int64_t>> NumpyRandomState::RandInt(int64_t low, int64_t high,
                                                               int64_t n) {
  if (high <= low) return absl::InvalidArgumentError("randint: low >= high");
  if (n < 0) return absl::InvalidArgumentError("randint: negative size");
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) - 1;
  if (range > 0xffffffffULL) {
    return absl::UnimplementedError("randint: ranges wider than 2^32 are not reproduced");
  }
  std::vector<int64_t> out(static_cast<size_t>(n), low);
  if (range == 0) return out;  // numpy draws nothing for a one-value range
  const uint64_t mask = CoveringMask(range);
  for (int64_t& value : out) {
    uint64_t draw;
    do {
      draw = NextUint32() & mask;
    } while (draw > range);
    value = low + static_cast<int64_t>(draw);
  }
  return out;
}

std::vector<int64_t> NumpyRandomState::Permutation(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(std::max<int64_t>(n, 0)));
  std::iota(out.begin(), out.end(), int64_t{0});
  Shuffle(absl::MakeSpan(out));
  return out;
}

absl::StatusOr<std::vector<int64_t>> NumpyRandomState::Choice(int64_t pop_size, int64_t size,
                                                              bool replace,
                                                              absl::Span<const double> p) {
  if (pop_size <= 0 && size != 0) {
    return absl::InvalidArgumentError("choice: a cannot be empty unless no samples are taken");
  }
  if (size < 0) return absl::InvalidArgumentError("choice: negative dimensions are not allowed");
  if (pop_size > 0xffffffffLL) {
    return absl::UnimplementedError("choice: populations above 2^32 are not reproduced");
  }
  std::vector<double> probabilities(p.begin(), p.end());
  if (!p.empty()) {
    if (static_cast<int64_t>(p.size()) != pop_size) {
      return absl::InvalidArgumentError("choice: a and p must have the same size");
    }
    for (double v : p) {
      if (!(v >= 0.0)) {
        return absl::InvalidArgumentError("choice: probabilities are not non-negative");
      }
    }
    const double tolerance = std::sqrt(std::numeric_limits<double>::epsilon());
    if (std::abs(KahanSum(p) - 1.0) > tolerance) {
      return absl::InvalidArgumentError("choice: probabilities do not sum to 1");
    }
  }
  if (replace) {
    if (probabilities.empty()) return RandInt(0, pop_size, size);
    const std::vector<double> cdf = NormalisedCdf(probabilities);
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(size));
    for (double x : RandomSample(size)) out.push_back(SearchSortedRight(cdf, x));
    return out;
  }
  if (size > pop_size) {
    return absl::InvalidArgumentError(
        "choice: cannot take a larger sample than population when replace is False");
  }
  if (probabilities.empty()) {
    std::vector<int64_t> out = Permutation(pop_size);
    out.resize(static_cast<size_t>(size));
    return out;
  }
  const int64_t nonzero =
      std::count_if(probabilities.begin(), probabilities.end(), [](double v) { return v > 0; });
  if (nonzero < size) {
    return absl::InvalidArgumentError("choice: fewer non-zero entries in p than size");
  }
  // numpy's loop: draw what is still missing, zero the probabilities of what was found,
  // keep the first occurrence of each new index in draw order.
  std::vector<int64_t> found;
  found.reserve(static_cast<size_t>(size));
  while (static_cast<int64_t>(found.size()) < size) {
    const std::vector<double> draws = RandomSample(size - static_cast<int64_t>(found.size()));
    for (int64_t index : found) probabilities[static_cast<size_t>(index)] = 0.0;
    const std::vector<double> cdf = NormalisedCdf(probabilities);
    std::vector<int64_t> fresh;
    for (double x : draws) {
      const int64_t index = SearchSortedRight(cdf, x);
      if (std::find(fresh.begin(), fresh.end(), index) == fresh.end()) fresh.push_back(index);
    }
    found.insert(found.end(), fresh.begin(), fresh.end());
  }
  return found;
}

double NumpyPairwiseSum(absl::Span<const double> values) {
  constexpr size_t kBlock = 128;  // numpy's PW_BLOCKSIZE
  const size_t n = values.size();
  if (n < 8) {
    double sum = 0.0;
    for (double v : values) sum += v;
    return sum;
  }
  if (n <= kBlock) {
    double r[8];
    for (int k = 0; k < 8; ++k) r[k] = values[k];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int k = 0; k < 8; ++k) r[k] += values[i + k];
    }
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += values[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % 8;
  return NumpyPairwiseSum(values.subspan(0, half)) + NumpyPairwiseSum(values.subspan(half));
}

}  // namespace hgeval::tasks
