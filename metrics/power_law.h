// Power laws y = a * x^b fitted by least squares in log space (numpy's polyfit(log x,
// log y, 1)), their bootstrap confidence intervals over points, and the compute-optimal
// frontier of a checkpoint series (the scaling-law paper's L(C), L(N), L(D), N_opt(C),
// D_opt(C) fits; docs/series.md).
#ifndef HGEVAL_METRICS_POWER_LAW_H_
#define HGEVAL_METRICS_POWER_LAW_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hgeval::metrics {

struct PowerLaw {
  double a = 0;   // coefficient: y at x = 1
  double b = 0;   // exponent
  double r2 = 0;  // coefficient of determination in log space
  int points = 0;
  double operator()(double x) const;
};

// Least squares of log y on log x. InvalidArgument for fewer than 2 points, sizes that
// differ, a non-positive or non-finite value, or x values that are all equal.
absl::StatusOr<PowerLaw> FitPowerLaw(absl::Span<const double> x, absl::Span<const double> y);

struct Interval {
  double low = 0;
  double high = 0;
};

struct PowerLawInterval {
  Interval a;
  Interval b;
  int resamples = 0;  // resamples that could be fitted (those with 2 distinct x)
};

// Percentile bootstrap: `iterations` resamples of the points with replacement (a
// std::mt19937_64 seeded with `seed`, so the interval is the same on every run and
// machine), each fitted as FitPowerLaw; the central `confidence` of the fitted a and b.
// Resamples whose x are all equal are skipped. Errors as FitPowerLaw on the points.
absl::StatusOr<PowerLawInterval> BootstrapPowerLaw(absl::Span<const double> x,
                                                   absl::Span<const double> y,
                                                   int iterations = 1000, double confidence = 0.95,
                                                   uint64_t seed = 1234);

// The compute-optimal frontier: indices of the points whose loss is lower than that of
// every point with less or equal compute (ties in compute: the lowest loss), in order of
// compute. N_opt(C) and D_opt(C) are fitted through these points' N and D.
std::vector<int> ComputeOptimalFrontier(absl::Span<const double> compute,
                                        absl::Span<const double> loss);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_POWER_LAW_H_
