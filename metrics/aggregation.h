// lm-evaluation-harness aggregations and standard errors (lm_eval/api/metrics.py):
// mean, sample stderr, perplexity, weighted (word/byte) perplexity, bits_per_byte and the
// bootstrap stderr used for perplexity. Sums are sequential double sums, as the spec
// describes Python's (CPython >= 3.12 compensates float sums; the difference is at the
// level of 1e-16 relative).
#ifndef HGEVAL_METRICS_AGGREGATION_H_
#define HGEVAL_METRICS_AGGREGATION_H_

#include <cstdint>
#include <functional>

#include "absl/types/span.h"

namespace hgeval::metrics {

// sum(xs) / len(xs); NaN for an empty input.
double Mean(absl::Span<const double> xs);
// sqrt(sum((x - mean)^2) / (n - 1)); NaN for n <= 1.
double SampleStddev(absl::Span<const double> xs);
// SampleStddev / sqrt(n): lm-eval's mean_stderr (sqrt(p(1-p)/(n-1)) for 0/1 values).
double MeanStderr(absl::Span<const double> xs);

// exp(-mean(loglikelihoods)): lm-eval's "perplexity" aggregation (per-document totals).
double Perplexity(absl::Span<const double> loglikelihoods);
// exp(-sum(ll) / sum(weights)): word_perplexity / byte_perplexity.
double WeightedPerplexity(absl::Span<const double> loglikelihoods,
                          absl::Span<const double> weights);
// -(sum(ll) / sum(bytes)) / ln 2.
double BitsPerByte(absl::Span<const double> loglikelihoods, absl::Span<const double> bytes);

// lm-eval's bootstrap_stderr(f, xs, iters): for chunk i in [0, iters / 1000), seed a
// CPython random.Random(i) and append f(rnd.choices(xs, k=len(xs))) min(1000, iters)
// times; the result is the sample stddev of all replicates. Deterministic; identical to
// lm-eval's value (up to summation order in f). iters must be >= 1000 or a multiple.
double BootstrapStderr(const std::function<double(absl::Span<const double>)>& f,
                       absl::Span<const double> xs, int64_t iters);

// The stderr lm-eval reports for a "perplexity" aggregate (bootstrap, iters as given;
// lm-eval's default is 100000).
double PerplexityStderr(absl::Span<const double> loglikelihoods, int64_t iters = 100000);

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_AGGREGATION_H_
