// The NIAH grid metrics of Shen et al. 2024 ("Scaling Laws for Linear Complexity Language
// Models", App. B.1): acc@len, acc<=len, average accuracy, weighted average accuracy with
// geometric depth/length weights, and the NIAH score (weighted accuracy times a per-length
// penalty for depth columns that alternate between success and failure).
//
// The paper leaves the weight constants and the combination rule unpublished; hgeval
// normalises by the weight sum (so w_0 cancels), defaults alpha_d = alpha_c = 1.01, and
// combines as  score = sum_c sum_d w_c w_d p_c b_dc / sum_c sum_d w_c w_d.
#ifndef HGEVAL_METRICS_NIAH_METRICS_H_
#define HGEVAL_METRICS_NIAH_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::metrics {

// Cell scores in [0, 10], scores[l][d] for lengths[l] (ascending) and depths[d]
// (ascending, percent).
struct NiahGridScores {
  std::vector<int64_t> lengths;
  std::vector<double> depths;
  std::vector<std::vector<double>> scores;
};

struct NiahMetricOptions {
  double threshold = 5.0;      // success = score >= threshold
  double depth_alpha = 1.01;   // w_d,i = alpha_d^(i-1), deeper cells weigh more
  double length_alpha = 1.01;  // w_c,j = alpha_c^(j-1), longer contexts weigh more
  // Lengths for the named acc@len / acc<=len entries (the paper's 2k/4k/8k/16k).
  std::vector<int64_t> report_lengths = {2000, 4000, 8000, 16000};
};

struct NiahNamedAccuracy {
  int64_t length = 0;       // the requested length (e.g. 2000)
  int64_t grid_length = 0;  // acc@: the grid column used (nearest; the shorter on ties)
  double acc_at = 0.0;      // fraction of successful depths in that column
  double acc_up_to = 0.0;   // fraction over every column with length <= `length`
  int64_t columns_up_to = 0;
};

struct NiahMetrics {
  std::vector<double> acc_at_length;     // per grid column, fraction in [0, 1]
  std::vector<double> acc_up_to_length;  // per grid column: columns 0..l
  std::vector<double> column_penalty;    // p_c per grid column
  // One per report length within [lengths.front(), lengths.back()].
  std::vector<NiahNamedAccuracy> named;
  double average_accuracy = 0.0;  // all cells
  double weighted_average_accuracy = 0.0;
  double niah_score = 0.0;
};

// The number of maximal runs of equal values (0 for an empty column).
int CountRuns(const std::vector<bool>& column);

// p = 0 when nothing succeeds, 1 when everything does, else 2^((1 - runs) / 2).
double ColumnPenalty(const std::vector<bool>& column);

// Geometric weights alpha^(i-1), i = 1..count (unnormalised).
std::vector<double> GeometricWeights(int count, double alpha);

// InvalidArgument on an empty or ragged grid, unsorted lengths or alpha <= 0.
absl::StatusOr<NiahMetrics> ComputeNiahMetrics(const NiahGridScores& grid,
                                               const NiahMetricOptions& options = {});

}  // namespace hgeval::metrics

#endif  // HGEVAL_METRICS_NIAH_METRICS_H_
