// `hgeval sweep`: one task set over a series of checkpoints (docs/series.md), submitted
// as one series (SubmitSeries): the server runs one job per checkpoint (loaded once, every
// result kept in the store under its content hash, so a re-run or an extended series
// recomputes nothing) and resumes them after a restart. A sweep stopped, or whose server
// was killed, is resumed by running it again: the submission names the same series, whose
// finished jobs are read back and running ones re-watched. Then the points,
// per-architecture power-law fits, CSV, per-size table and plots are written to the
// output folder.
#ifndef HGEVAL_CLIENT_SWEEP_H_
#define HGEVAL_CLIENT_SWEEP_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "nlohmann/json.hpp"
#include "tasks/series/series_report.h"

namespace hgeval::client {

// The files a sweep writes to its output folder.
inline constexpr char kSeriesResultsJson[] = "series_results.json";
inline constexpr char kSeriesPointsCsv[] = "series_points.csv";
inline constexpr char kSeriesTableMd[] = "series_table.md";
inline constexpr char kSeriesComputePng[] = "series_loss_vs_compute.png";
inline constexpr char kSeriesParametersPng[] = "series_loss_vs_parameters.png";

struct SweepOptions {
  std::string name = "series";  // the series' name on the server
  std::vector<tasks::series::Checkpoint> checkpoints;
  std::vector<std::string> tasks;
  int32_t limit = 0;
  hgeval::v1::JobOptions job_options;
  std::string output_dir;
  tasks::series::FitOptions fit;  // an empty metric: the first task's first metric
};

// Watches one checkpoint's job to its final state; `index` of `total` for progress.
using SweepWatcher = std::function<absl::StatusOr<hgeval::v1::Job>(
    Client& client, const std::string& id, int index, int total, const std::string& model)>;

struct SweepResult {
  std::string series_id;
  std::vector<tasks::series::Point> points;
  nlohmann::json report;  // SeriesJson plus the sweep's tasks and limit
};

// Runs (or resumes) the sweep and writes its outputs. A checkpoint whose job fails ends
// the sweep with that job's error (the series keeps the finished ones).
absl::StatusOr<SweepResult> RunSweep(Client& client, const SweepOptions& options,
                                     const SweepWatcher& watch);

}  // namespace hgeval::client

#endif  // HGEVAL_CLIENT_SWEEP_H_
