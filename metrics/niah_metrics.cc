#include "metrics/niah_metrics.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace hgeval::metrics {

int CountRuns(const std::vector<bool>& column) {
  if (column.empty()) return 0;
  int runs = 1;
  for (size_t i = 1; i < column.size(); ++i) {
    if (column[i] != column[i - 1]) ++runs;
  }
  return runs;
}

double ColumnPenalty(const std::vector<bool>& column) {
  bool any = false, all = true;
  for (bool b : column) {
    any = any || b;
    all = all && b;
  }
  if (!any) return 0.0;
  if (all) return 1.0;
  return std::pow(2.0, (1.0 - CountRuns(column)) / 2.0);
}

std::vector<double> GeometricWeights(int count, double alpha) {
  std::vector<double> weights(count);
  double w = 1.0;
  for (int i = 0; i < count; ++i) {
    weights[i] = w;
    w *= alpha;
  }
  return weights;
}

absl::StatusOr<NiahMetrics> ComputeNiahMetrics(const NiahGridScores& grid,
                                               const NiahMetricOptions& options) {
  const size_t num_lengths = grid.lengths.size();
  const size_t num_depths = grid.depths.size();
  if (num_lengths == 0 || num_depths == 0) {
    return absl::InvalidArgumentError("NIAH metrics need at least one length and one depth");
  }
  if (grid.scores.size() != num_lengths) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "NIAH grid has %d score columns for %d lengths", grid.scores.size(), num_lengths));
  }
  for (size_t l = 0; l < num_lengths; ++l) {
    if (grid.scores[l].size() != num_depths) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "NIAH grid column %d has %d scores for %d depths", l, grid.scores[l].size(), num_depths));
    }
    if (l > 0 && grid.lengths[l] <= grid.lengths[l - 1]) {
      return absl::InvalidArgumentError("NIAH grid lengths must be strictly ascending");
    }
  }
  if (!(options.depth_alpha > 0) || !(options.length_alpha > 0)) {
    return absl::InvalidArgumentError("NIAH weight alphas must be positive");
  }

  std::vector<std::vector<bool>> success(num_lengths, std::vector<bool>(num_depths));
  for (size_t l = 0; l < num_lengths; ++l) {
    for (size_t d = 0; d < num_depths; ++d) {
      success[l][d] = grid.scores[l][d] >= options.threshold;
    }
  }

  NiahMetrics m;
  std::vector<double> column_successes(num_lengths, 0.0);
  for (size_t l = 0; l < num_lengths; ++l) {
    for (bool b : success[l]) column_successes[l] += b ? 1.0 : 0.0;
    m.acc_at_length.push_back(column_successes[l] / num_depths);
    m.column_penalty.push_back(ColumnPenalty(success[l]));
  }
  double cumulative = 0;
  for (size_t l = 0; l < num_lengths; ++l) {
    cumulative += column_successes[l];
    m.acc_up_to_length.push_back(cumulative / ((l + 1) * num_depths));
  }
  m.average_accuracy = m.acc_up_to_length.back();

  const std::vector<double> depth_weights = GeometricWeights(num_depths, options.depth_alpha);
  const std::vector<double> length_weights = GeometricWeights(num_lengths, options.length_alpha);
  double weight_sum = 0, weighted_success = 0, penalised_success = 0;
  for (size_t l = 0; l < num_lengths; ++l) {
    for (size_t d = 0; d < num_depths; ++d) {
      const double w = length_weights[l] * depth_weights[d];
      weight_sum += w;
      if (success[l][d]) {
        weighted_success += w;
        penalised_success += w * m.column_penalty[l];
      }
    }
  }
  m.weighted_average_accuracy = weighted_success / weight_sum;
  m.niah_score = penalised_success / weight_sum;

  for (int64_t length : options.report_lengths) {
    if (length < grid.lengths.front() || length > grid.lengths.back()) continue;
    NiahNamedAccuracy named;
    named.length = length;
    size_t nearest = 0;
    for (size_t l = 1; l < num_lengths; ++l) {
      if (std::llabs(grid.lengths[l] - length) < std::llabs(grid.lengths[nearest] - length)) {
        nearest = l;
      }
    }
    named.grid_length = grid.lengths[nearest];
    named.acc_at = m.acc_at_length[nearest];
    double successes = 0;
    for (size_t l = 0; l < num_lengths && grid.lengths[l] <= length; ++l) {
      successes += column_successes[l];
      ++named.columns_up_to;
    }
    named.acc_up_to = successes / (named.columns_up_to * num_depths);
    m.named.push_back(named);
  }
  return m;
}

}  // namespace hgeval::metrics
