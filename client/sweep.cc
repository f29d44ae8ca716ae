#include "client/sweep.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/util/status_macros.h"
#include "tasks/api/registry.h"
#include "tasks/plot/series_plot.h"

namespace hgeval::client {
namespace v1 = ::hgeval::v1;
namespace fs = std::filesystem;
using tasks::series::Point;

namespace {

absl::Status WriteText(const fs::path& path, const std::string& text) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary);
    out << text;
    out.close();
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", partial.string()));
  }
  std::error_code error;
  fs::rename(partial, path, error);  // whole files only: a killed sweep leaves no torn state
  if (error) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

// The checkpoint's content hash, as the job's results JSON records it (lm-eval's config).
std::string ModelHash(const v1::Job& job) {
  nlohmann::json results = nlohmann::json::parse(job.results_json(), nullptr, false);
  if (results.is_discarded() || !results.contains("config")) return "";
  return results["config"].value("model_hash", std::string());
}

// One curve per architecture of the fit `fit_name` (x = `x_field` of each checkpoint).
std::vector<plot::Curve> Curves(const nlohmann::json& report, const std::string& fit_name,
                                const std::string& x_field, const std::string& metric) {
  std::map<std::string, plot::Curve> by_arch;
  for (const nlohmann::json& c : report["checkpoints"]) {
    const std::string arch = c.value("architecture", std::string());
    const std::string label = arch.empty() ? "(none)" : arch;
    if (!c["metrics"].contains(metric)) continue;
    plot::Curve& curve = by_arch[label];
    curve.label = label;
    curve.x.push_back(c.value(x_field, 0.0));
    curve.y.push_back(c["metrics"][metric].get<double>());
  }
  std::vector<plot::Curve> out;
  for (auto& [label, curve] : by_arch) {
    const nlohmann::json& fits = report["fits"];
    if (fits.contains(label) && fits[label].contains(fit_name) &&
        fits[label][fit_name].contains("b")) {
      curve.has_fit = true;
      curve.a = fits[label][fit_name]["a"].get<double>();
      curve.b = fits[label][fit_name]["b"].get<double>();
    }
    out.push_back(std::move(curve));
  }
  return out;
}

absl::Status WriteOutputs(const SweepResult& result, const std::string& metric,
                          const fs::path& dir) {
  HG_RETURN_IF_ERROR(WriteText(dir / kSeriesResultsJson, result.report.dump(2) + "\n"));
  HG_RETURN_IF_ERROR(WriteText(dir / kSeriesPointsCsv, tasks::series::SeriesCsv(result.points)));
  HG_RETURN_IF_ERROR(
      WriteText(dir / kSeriesTableMd, tasks::series::SeriesTable(result.points, metric)));
  for (const auto& [fit, field, png, axis] :
       {std::tuple{"loss_vs_compute", "compute", kSeriesComputePng, "compute C (FLOPs, 6ND)"},
        std::tuple{"loss_vs_parameters", "parameters", kSeriesParametersPng,
                   "non-embedding parameters N"}}) {
    std::vector<plot::Curve> curves = Curves(result.report, fit, field, metric);
    if (fit == std::string("loss_vs_parameters")) {
      // The points of the L(N) fit only: each size at its largest token budget.
      for (plot::Curve& curve : curves) {
        std::map<double, std::pair<double, double>> best;  // N -> (D, y)
        for (const nlohmann::json& c : result.report["checkpoints"]) {
          if (c.value("architecture", std::string()) != curve.label ||
              !c["metrics"].contains(metric)) {
            continue;
          }
          auto& slot = best[c.value("parameters", 0.0)];
          if (c.value("tokens", 0.0) >= slot.first) {
            slot = {c.value("tokens", 0.0), c["metrics"][metric].get<double>()};
          }
        }
        curve.x.clear();
        curve.y.clear();
        for (const auto& [n, dy] : best) {
          curve.x.push_back(n);
          curve.y.push_back(dy.second);
        }
      }
    }
    plot::PlotOptions options;
    options.title = absl::StrCat(metric, " against ", field, " (fits: least squares in log space)");
    options.x_label = axis;
    options.y_label = metric;
    absl::Status s = plot::WriteSeriesPlotPng(curves, options, (dir / png).string());
    if (!s.ok() && !absl::IsInvalidArgument(s)) return s;  // no points: no plot
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SweepResult> RunSweep(Client& client, const SweepOptions& options,
                                     const SweepWatcher& watch) {
  tasks::series::FitOptions fit = options.fit;
  if (fit.metric.empty()) {
    HG_ASSIGN_OR_RETURN(fit.metric, tasks::series::DefaultFitMetric(options.tasks));
  }
  const fs::path dir(options.output_dir);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", dir.string(), ": ", error.message()));
  }
  // One submission: the server runs every checkpoint's job (resuming them after a
  // restart) and keeps the series; submitting it again finds it.
  v1::SubmitSeriesRequest request;
  request.set_name(options.name);
  for (const tasks::series::Checkpoint& c : options.checkpoints) {
    v1::SeriesCheckpoint* checkpoint = request.add_checkpoints();
    checkpoint->set_model(c.model);
    checkpoint->set_architecture(c.architecture);
    checkpoint->set_parameters(c.parameters);
    checkpoint->set_tokens(c.tokens);
    checkpoint->set_compute(c.compute);
    checkpoint->set_step(c.step);
  }
  for (const std::string& t : options.tasks) request.add_tasks(t);
  request.set_limit(options.limit);
  *request.mutable_options() = options.job_options;
  HG_ASSIGN_OR_RETURN(v1::Series series, client.SubmitSeries(request));
  SweepResult result;
  result.series_id = series.id();
  const int total = series.points_size();
  std::vector<std::string> model_hashes(total);
  for (int i = 0; i < total; ++i) {
    const v1::SeriesPoint& point = series.points(i);
    HG_ASSIGN_OR_RETURN(v1::Job job, client.GetJob(point.job_id()));
    if (job.state() == v1::JOB_STATE_QUEUED || job.state() == v1::JOB_STATE_RUNNING) {
      HG_ASSIGN_OR_RETURN(job, watch(client, point.job_id(), i, total, point.checkpoint().model()));
    }
    if (job.state() != v1::JOB_STATE_SUCCEEDED) {
      return absl::AbortedError(
          absl::StrCat("checkpoint ", point.checkpoint().model(), ": job ", job.id(), " ended ",
                       v1::JobState_Name(job.state()), ": ", job.error(),
                       " (run the sweep again: the series resubmits that checkpoint)"));
    }
    model_hashes[i] = ModelHash(job);
  }
  // The points as the server records them (each job's metrics).
  HG_ASSIGN_OR_RETURN(series, client.GetSeries(series.id()));
  if (series.points_size() != total) {
    return absl::AbortedError(absl::StrCat("series ", series.id(), " changed while it ran"));
  }
  for (int i = 0; i < total; ++i) {
    Point point = tasks::series::PointFromWire(series.points(i));
    point.model_hash = model_hashes[i];
    result.points.push_back(std::move(point));
  }
  result.report = tasks::series::SeriesJson(result.points, fit);
  result.report["tasks"] = options.tasks;
  result.report["limit"] = options.limit;
  HG_RETURN_IF_ERROR(WriteOutputs(result, fit.metric, dir));
  return result;
}

}  // namespace hgeval::client
