// A checkpoint series' report (docs/series.md): the series file that names the
// checkpoints with their architecture, parameters N, tokens D and compute C; the points
// (each checkpoint's metrics from its job); the fits of metrics/power_law per
// architecture; and the JSON, CSV and per-size table written by `hgeval sweep`.
#ifndef HGEVAL_TASKS_SERIES_SERIES_REPORT_H_
#define HGEVAL_TASKS_SERIES_SERIES_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace hgeval::tasks::series {

struct Checkpoint {
  std::string model;         // the server's model name
  std::string architecture;  // e.g. "llama", "hgrn2": fits are per architecture
  double parameters = 0;     // N (0: unknown)
  double tokens = 0;         // D, tokens seen in training (0: unknown)
  double compute = 0;        // C, FLOPs; 6 N D when the file gives none
  int64_t step = -1;         // training step (-1: unknown)
};

// {"checkpoints": [{"model", "architecture"?, "parameters"?, "tokens"?, "compute"?,
// "step"?}, ...]}; InvalidArgument names the entry at fault (no model, a repeated model,
// a negative number).
absl::StatusOr<std::vector<Checkpoint>> ParseSeriesFile(const std::string& json_text);

struct Point {
  Checkpoint checkpoint;
  std::string model_hash;  // the engine's content hash: the result store's model key
  std::string job_id;
  int64_t requests = 0;
  int64_t requests_cached = 0;            // answered from the result store
  std::map<std::string, double> metrics;  // "task/metric" (no stderr)
};

// A point as the wire carries it (hgeval.v1.SeriesPoint, proto/hgeval/v1/jobs.proto),
// without its model hash (the wire has none). A template so that tasks/ need not include
// the wire contract: the client (hgeval sweep) and the server's web UI call it.
template <typename WirePoint>
Point PointFromWire(const WirePoint& wire) {
  Point point;
  const auto& c = wire.checkpoint();
  point.checkpoint = {.model = c.model(),
                      .architecture = c.architecture(),
                      .parameters = c.parameters(),
                      .tokens = c.tokens(),
                      .compute = c.compute(),
                      .step = c.step()};
  point.job_id = wire.job_id();
  point.requests = wire.requests_done();
  point.requests_cached = wire.requests_cached();
  point.metrics = std::map<std::string, double>(wire.metrics().begin(), wire.metrics().end());
  return point;
}

// The metric a series fits when none is named: the first task's first metric
// ("task/metric"); InvalidArgument without tasks, NotFound for an unknown task.
absl::StatusOr<std::string> DefaultFitMetric(const std::vector<std::string>& task_names);

struct FitOptions {
  std::string metric;  // the loss fitted against C, N, D ("task/metric")
  int bootstrap_iterations = 1000;
  double confidence = 0.95;
  uint64_t seed = 1234;
};

// Every point and, per architecture, the fits that its points allow: the loss against
// compute (all points), parameters (each N at its largest D), tokens (each D at its
// largest N); N_opt and D_opt against compute through the compute-optimal frontier's
// points (metrics::ComputeOptimalFrontier); every other metric against compute. A fit
// the data do not allow is {"error": why}.
nlohmann::json SeriesJson(const std::vector<Point>& points, const FitOptions& options);

// One row per checkpoint: model, model_hash, architecture, parameters, tokens, compute,
// step, then one column per metric (sorted by name; empty where a point lacks it).
std::string SeriesCsv(const std::vector<Point>& points);

// The paper's per-size table (Markdown): one row per architecture and size at its largest
// token budget: the fitted metric, every perplexity, the commonsense average (acc_norm,
// else acc, of the CSR tasks present), NIAH weighted accuracy and the SCROLLS average
// where the series has them.
std::string SeriesTable(const std::vector<Point>& points, const std::string& metric);

}  // namespace hgeval::tasks::series

#endif  // HGEVAL_TASKS_SERIES_SERIES_REPORT_H_
