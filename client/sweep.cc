#include "client/sweep.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>
#include <tuple>

#include "absl/strings/escaping.h"
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

// The job ids of a sweep's checkpoints, kept for resuming; the tasks and limit they were
// submitted with, so that a sweep with other tasks does not pick them up.
struct SweepState {
  std::string key;
  std::map<std::string, std::string> jobs;  // model -> job id
};

std::string StateKey(const SweepOptions& options) {
  return absl::StrCat(absl::StrJoin(options.tasks, ","), " limit ", options.limit, " options ",
                      absl::BytesToHexString(options.job_options.SerializeAsString()));
}

SweepState ReadState(const fs::path& path, const std::string& key) {
  SweepState state{key, {}};
  std::ifstream in(path);
  if (!in) return state;
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || j.value("key", std::string()) != key || !j.contains("jobs") ||
      !j["jobs"].is_object()) {
    return state;
  }
  for (const auto& [model, id] : j["jobs"].items()) {
    if (id.is_string()) state.jobs[model] = id.get<std::string>();
  }
  return state;
}

absl::Status WriteState(const fs::path& path, const SweepState& state) {
  return WriteText(path, nlohmann::json{{"key", state.key}, {"jobs", state.jobs}}.dump(1));
}

// "task/metric" -> value of a finished job's results (stderr entries left out).
std::map<std::string, double> JobMetrics(const v1::Job& job) {
  std::map<std::string, double> out;
  for (const v1::TaskResult& result : job.results()) {
    for (const auto& [name, value] : result.metrics()) {
      std::string metric = name.substr(0, name.find(','));
      if (absl::EndsWith(metric, "_stderr")) continue;
      out[absl::StrCat(result.task(), "/", metric)] = value;
    }
  }
  return out;
}

// The checkpoint's content hash, as the job's results JSON records it (lm-eval's config).
std::string ModelHash(const v1::Job& job) {
  nlohmann::json results = nlohmann::json::parse(job.results_json(), nullptr, false);
  if (results.is_discarded() || !results.contains("config")) return "";
  return results["config"].value("model_hash", std::string());
}

absl::StatusOr<std::string> DefaultMetric(const std::vector<std::string>& task_names) {
  if (task_names.empty()) return absl::InvalidArgumentError("sweep: no tasks");
  HG_ASSIGN_OR_RETURN(std::unique_ptr<tasks::Task> task, tasks::CreateTask(task_names[0]));
  const std::vector<tasks::MetricSpec> metrics = task->metrics();
  if (metrics.empty()) return absl::InvalidArgumentError("sweep: the first task has no metric");
  return absl::StrCat(task_names[0], "/", metrics[0].name);
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
    HG_ASSIGN_OR_RETURN(fit.metric, DefaultMetric(options.tasks));
  }
  const fs::path dir(options.output_dir);
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", dir.string(), ": ", error.message()));
  }
  SweepState state = ReadState(dir / kSeriesStateJson, StateKey(options));
  SweepResult result;
  const int total = static_cast<int>(options.checkpoints.size());
  for (int i = 0; i < total; ++i) {
    const tasks::series::Checkpoint& checkpoint = options.checkpoints[i];
    absl::StatusOr<v1::Job> job = absl::NotFoundError("no job yet");
    if (auto it = state.jobs.find(checkpoint.model); it != state.jobs.end()) {
      job = client.GetJob(it->second);
      if (job.ok() && job->state() != v1::JOB_STATE_SUCCEEDED) {
        const bool live =
            job->state() == v1::JOB_STATE_QUEUED || job->state() == v1::JOB_STATE_RUNNING;
        job = live ? watch(client, it->second, i, total, checkpoint.model)
                   : absl::StatusOr<v1::Job>(absl::FailedPreconditionError("ended"));
      }
    }
    if (!job.ok() || job->state() != v1::JOB_STATE_SUCCEEDED) {
      // No job, or one that ended without results: submit; the store answers whatever
      // an earlier job of this checkpoint computed.
      v1::SubmitJobRequest request;
      request.set_model(checkpoint.model);
      for (const std::string& t : options.tasks) request.add_tasks(t);
      request.set_limit(options.limit);
      *request.mutable_options() = options.job_options;
      HG_ASSIGN_OR_RETURN(std::string id, client.SubmitJob(request));
      state.jobs[checkpoint.model] = id;
      HG_RETURN_IF_ERROR(WriteState(dir / kSeriesStateJson, state));
      job = watch(client, id, i, total, checkpoint.model);
      if (!job.ok()) return job.status();
    }
    if (job->state() != v1::JOB_STATE_SUCCEEDED) {
      return absl::AbortedError(absl::StrCat("checkpoint ", checkpoint.model, ": job ", job->id(),
                                             " ended ", v1::JobState_Name(job->state()), ": ",
                                             job->error()));
    }
    Point point;
    point.checkpoint = checkpoint;
    point.job_id = job->id();
    point.requests = job->requests_done();
    point.requests_cached = job->requests_cached();
    point.metrics = JobMetrics(*job);
    point.model_hash = ModelHash(*job);
    result.points.push_back(std::move(point));
  }
  result.report = tasks::series::SeriesJson(result.points, fit);
  result.report["tasks"] = options.tasks;
  result.report["limit"] = options.limit;
  HG_RETURN_IF_ERROR(WriteOutputs(result, fit.metric, dir));
  return result;
}

}  // namespace hgeval::client
