#include "metrics/power_law.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hgeval::metrics {
namespace {

absl::Status CheckPoints(absl::Span<const double> x, absl::Span<const double> y) {
  if (x.size() != y.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("power law fit: ", x.size(), " x values but ", y.size(), " y values"));
  }
  if (x.size() < 2) return absl::InvalidArgumentError("power law fit: needs at least 2 points");
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0) || !(y[i] > 0) || !std::isfinite(x[i]) || !std::isfinite(y[i])) {
      return absl::InvalidArgumentError(absl::StrCat("power law fit: point ", i, " (", x[i], ", ",
                                                     y[i], ") is not positive and finite"));
    }
  }
  return absl::OkStatus();
}

// Fits log-space points into *law; false when the x are all equal.
bool FitLogs(const std::vector<double>& lx, const std::vector<double>& ly, PowerLaw* law) {
  const double n = static_cast<double>(lx.size());
  const double mx = std::accumulate(lx.begin(), lx.end(), 0.0) / n;
  const double my = std::accumulate(ly.begin(), ly.end(), 0.0) / n;
  double sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < lx.size(); ++i) {
    sxx += (lx[i] - mx) * (lx[i] - mx);
    sxy += (lx[i] - mx) * (ly[i] - my);
    syy += (ly[i] - my) * (ly[i] - my);
  }
  if (!(sxx > 0)) return false;
  law->b = sxy / sxx;
  law->a = std::exp(my - law->b * mx);
  // Residual sum of squares over total; 1 when y is constant and fitted exactly.
  law->r2 = syy > 0 ? 1.0 - (syy - law->b * sxy) / syy : 1.0;
  law->points = static_cast<int>(lx.size());
  return true;
}

}  // namespace

double PowerLaw::operator()(double x) const { return a * std::pow(x, b); }

absl::StatusOr<PowerLaw> FitPowerLaw(absl::Span<const double> x, absl::Span<const double> y) {
  if (absl::Status s = CheckPoints(x, y); !s.ok()) return s;
  std::vector<double> lx(x.size()), ly(y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    lx[i] = std::log(x[i]);
    ly[i] = std::log(y[i]);
  }
  PowerLaw law;
  if (!FitLogs(lx, ly, &law)) {
    return absl::InvalidArgumentError("power law fit: all x values are equal");
  }
  return law;
}

absl::StatusOr<PowerLawInterval> BootstrapPowerLaw(absl::Span<const double> x,
                                                   absl::Span<const double> y, int iterations,
                                                   double confidence, uint64_t seed) {
  if (absl::Status s = FitPowerLaw(x, y).status(); !s.ok()) return s;
  if (iterations < 1 || !(confidence > 0 && confidence < 1)) {
    return absl::InvalidArgumentError("bootstrap: iterations >= 1 and 0 < confidence < 1");
  }
  std::mt19937_64 rng(seed);
  const size_t n = x.size();
  std::vector<double> as, bs, lx(n), ly(n);
  for (int it = 0; it < iterations; ++it) {
    for (size_t i = 0; i < n; ++i) {
      // Modulo of the raw 64-bit draw: the same index sequence on every standard library
      // (std::uniform_int_distribution's algorithm is implementation-defined).
      const size_t j = static_cast<size_t>(rng() % n);
      lx[i] = std::log(x[j]);
      ly[i] = std::log(y[j]);
    }
    PowerLaw law;
    if (!FitLogs(lx, ly, &law)) continue;
    as.push_back(law.a);
    bs.push_back(law.b);
  }
  PowerLawInterval out;
  out.resamples = static_cast<int>(as.size());
  if (as.empty()) {
    return absl::InvalidArgumentError("bootstrap: no resample had two distinct x values");
  }
  auto percentile = [](std::vector<double>& v, double q) {
    std::sort(v.begin(), v.end());
    // Linear interpolation between order statistics (numpy's default percentile).
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
  };
  const double tail = (1.0 - confidence) / 2.0;
  out.a = {percentile(as, tail), percentile(as, 1.0 - tail)};
  out.b = {percentile(bs, tail), percentile(bs, 1.0 - tail)};
  return out;
}

std::vector<int> ComputeOptimalFrontier(absl::Span<const double> compute,
                                        absl::Span<const double> loss) {
  std::vector<int> order(std::min(compute.size(), loss.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int i, int j) {
    return compute[i] != compute[j] ? compute[i] < compute[j] : loss[i] < loss[j];
  });
  std::vector<int> frontier;
  double best = INFINITY;
  for (size_t k = 0; k < order.size(); ++k) {
    const int i = order[k];
    if (k > 0 && compute[i] == compute[order[k - 1]]) continue;  // a tie: the lowest loss went
    if (loss[i] < best) {
      frontier.push_back(i);
      best = loss[i];
    }
  }
  return frontier;
}

}  // namespace hgeval::metrics
