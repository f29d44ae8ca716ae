#include "engine/model/tnl_decay.h"

#include <cmath>

namespace hgeval {

std::vector<double> AlibiSlopes(int64_t n) {
  auto power_of_two = [](int64_t m) {
    const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(static_cast<double>(m)) - 3)));
    std::vector<double> s(m);
    for (int64_t i = 0; i < m; ++i) s[i] = start * std::pow(start, static_cast<double>(i));
    return s;
  };
  const double lg = std::log2(static_cast<double>(n));
  if (lg == std::floor(lg)) return power_of_two(n);
  const int64_t closest = int64_t{1} << static_cast<int64_t>(std::floor(lg));
  std::vector<double> s = power_of_two(closest);
  const std::vector<double> twice = AlibiSlopes(2 * closest);
  for (int64_t i = 0; static_cast<int64_t>(s.size()) < n; i += 2) s.push_back(twice[i]);
  return s;
}

std::vector<double> TnlDecays(int64_t heads, int64_t layer, int64_t layers) {
  const std::vector<double> slopes = AlibiSlopes(heads);
  std::vector<double> decay(heads);
  for (int64_t h = 0; h < heads; ++h) {
    // Weaker decay in the deeper layers.
    const double lambda =
        slopes[h] * (1.0 - static_cast<double>(layer) / static_cast<double>(layers - 1) + 1e-5);
    decay[h] = std::exp(-lambda);
  }
  return decay;
}

}  // namespace hgeval
