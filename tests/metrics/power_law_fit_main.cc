// power_law_fit: reads "x y" lines on stdin, prints FitPowerLaw's a, b and r2 and the
// compute-optimal frontier of the points (x as compute, y as loss) as one JSON line, for
// tests/metrics/power_law_numpy_test.py.
#include <cstdio>
#include <iostream>
#include <vector>

#include "metrics/power_law.h"

int main() {
  std::vector<double> x, y;
  double a, b;
  while (std::cin >> a >> b) {
    x.push_back(a);
    y.push_back(b);
  }
  absl::StatusOr<hgeval::metrics::PowerLaw> law = hgeval::metrics::FitPowerLaw(x, y);
  if (!law.ok()) {
    std::fprintf(stderr, "%s\n", std::string(law.status().message()).c_str());
    return 1;
  }
  std::printf("{\"a\": %.17g, \"b\": %.17g, \"r2\": %.17g, \"frontier\": [", law->a, law->b,
              law->r2);
  const std::vector<int> frontier = hgeval::metrics::ComputeOptimalFrontier(x, y);
  for (size_t i = 0; i < frontier.size(); ++i) std::printf("%s%d", i ? ", " : "", frontier[i]);
  std::printf("]}\n");
  return 0;
}
