#include "metrics/aggregation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/util/worker_pool.h"
#include "metrics/python_random.h"

namespace hgeval::metrics {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Sum(absl::Span<const double> xs) {
  double total = 0.0;
  for (double x : xs) total += x;
  return total;
}
}  // namespace

double Mean(absl::Span<const double> xs) {
  if (xs.empty()) return kNaN;
  return Sum(xs) / static_cast<double>(xs.size());
}

double SampleStddev(absl::Span<const double> xs) {
  if (xs.size() <= 1) return kNaN;
  const double mu = Mean(xs);
  double squares = 0.0;
  for (double x : xs) squares += (x - mu) * (x - mu);
  return std::sqrt(squares / static_cast<double>(xs.size() - 1));
}

double MeanStderr(absl::Span<const double> xs) {
  return SampleStddev(xs) / std::sqrt(static_cast<double>(xs.size()));
}

double Perplexity(absl::Span<const double> loglikelihoods) {
  return std::exp(-Mean(loglikelihoods));
}

double WeightedPerplexity(absl::Span<const double> loglikelihoods,
                          absl::Span<const double> weights) {
  return std::exp(-(Sum(loglikelihoods) / Sum(weights)));
}

double BitsPerByte(absl::Span<const double> loglikelihoods, absl::Span<const double> bytes) {
  return -(Sum(loglikelihoods) / Sum(bytes)) / std::log(2.0);
}

double BootstrapStderr(const std::function<double(absl::Span<const double>)>& f,
                       absl::Span<const double> xs, int64_t iters) {
  const int64_t chunk_size = std::min<int64_t>(1000, iters);
  const int64_t chunks = chunk_size > 0 ? iters / chunk_size : 0;
  const int64_t n = static_cast<int64_t>(xs.size());
  // Chunks are independent (each seeds its own generator with its index, as lm-eval's
  // pool workers do), so they run on the process's worker pool; every replicate keeps its
  // slot, so the result does not depend on the number of threads.
  std::vector<double> replicates(static_cast<size_t>(chunks * chunk_size));
  RunOnWorkerPool(chunks, [&](int64_t chunk) {
    std::vector<double> sample(static_cast<size_t>(n));
    PythonRandom rnd(static_cast<uint64_t>(chunk));
    for (int64_t r = 0; r < chunk_size; ++r) {
      for (int64_t k = 0; k < n; ++k) sample[k] = xs[rnd.ChoiceIndex(n)];
      replicates[static_cast<size_t>(chunk * chunk_size + r)] = f(sample);
    }
  });
  return SampleStddev(replicates);
}

double PerplexityStderr(absl::Span<const double> loglikelihoods, int64_t iters) {
  return BootstrapStderr([](absl::Span<const double> s) { return Perplexity(s); }, loglikelihoods,
                         iters);
}

}  // namespace hgeval::metrics
