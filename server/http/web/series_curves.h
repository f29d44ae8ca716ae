// The web UI's scaling curves of a checkpoint series (docs/series.md): per architecture,
// one metric against compute, with the power law fitted by the one rule that `hgeval
// sweep` uses (tasks::series::SeriesJson, i.e. metrics/power_law): the browser only draws.
#ifndef HGEVAL_SERVER_HTTP_WEB_SERIES_CURVES_H_
#define HGEVAL_SERVER_HTTP_WEB_SERIES_CURVES_H_

#include <cstdint>
#include <vector>

#include "nlohmann/json.hpp"
#include "tasks/series/series_report.h"

namespace hgeval::server::web {

// Bound on the points of one answer: a series longer than this is cut (and says so).
inline constexpr int64_t kMaxSeriesCurvePoints = 4096;

// {"metric", "metrics" (every "task/metric" the points have, sorted), "truncated",
//  "architectures": [{"architecture", "points": [{"model", "compute", "value"}] (those
//  with compute > 0 and the metric, by compute), "fit": SeriesJson's loss_vs_compute fit
//  (a, b, r2, interval, or error), "line": [[compute, value], [compute, value]] (the
//  fitted law at the smallest and largest compute; absent without a fit)}]}.
nlohmann::json SeriesCurvesJson(const std::vector<tasks::series::Point>& points,
                                const tasks::series::FitOptions& options);

}  // namespace hgeval::server::web

#endif  // HGEVAL_SERVER_HTTP_WEB_SERIES_CURVES_H_
