#include "server/http/web/series_curves.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "metrics/power_law.h"

namespace hgeval::server::web {

nlohmann::json SeriesCurvesJson(const std::vector<tasks::series::Point>& points,
                                const tasks::series::FitOptions& options) {
  const bool truncated = static_cast<int64_t>(points.size()) > kMaxSeriesCurvePoints;
  const std::vector<tasks::series::Point> kept(
      points.begin(), truncated ? points.begin() + kMaxSeriesCurvePoints : points.end());
  // The fits come from the sweep's own report, so page and files cannot disagree.
  const nlohmann::json report = tasks::series::SeriesJson(kept, options);
  std::set<std::string> metric_keys;
  std::map<std::string, nlohmann::json> by_architecture;
  for (const tasks::series::Point& p : kept) {
    for (const auto& [key, value] : p.metrics) metric_keys.insert(key);
    const std::string name =
        p.checkpoint.architecture.empty() ? "(none)" : p.checkpoint.architecture;
    nlohmann::json& points_of = by_architecture[name];
    if (points_of.is_null()) points_of = nlohmann::json::array();
    auto it = p.metrics.find(options.metric);
    if (it == p.metrics.end() || !std::isfinite(it->second) || !(p.checkpoint.compute > 0)) {
      continue;
    }
    points_of.push_back(
        {{"model", p.checkpoint.model}, {"compute", p.checkpoint.compute}, {"value", it->second}});
  }
  nlohmann::json architectures = nlohmann::json::array();
  for (auto& [name, curve_points] : by_architecture) {
    std::stable_sort(curve_points.begin(), curve_points.end(),
                     [](const nlohmann::json& l, const nlohmann::json& r) {
                       return l["compute"].get<double>() < r["compute"].get<double>();
                     });
    nlohmann::json fit = report["fits"][name]["loss_vs_compute"];
    nlohmann::json curve = {{"architecture", name}, {"points", curve_points}, {"fit", fit}};
    if (fit.contains("a") && !curve_points.empty()) {
      metrics::PowerLaw law;
      law.a = fit["a"].get<double>();
      law.b = fit["b"].get<double>();
      nlohmann::json line = nlohmann::json::array();
      for (double c : {curve_points.front()["compute"].get<double>(),
                       curve_points.back()["compute"].get<double>()}) {
        line.push_back({c, law(c)});
      }
      curve["line"] = std::move(line);
    }
    architectures.push_back(std::move(curve));
  }
  return {{"metric", options.metric},
          {"metrics", metric_keys},
          {"truncated", truncated},
          {"architectures", std::move(architectures)}};
}

}  // namespace hgeval::server::web
