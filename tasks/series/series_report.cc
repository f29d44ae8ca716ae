#include "tasks/series/series_report.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "metrics/power_law.h"
#include "tasks/api/registry.h"

namespace hgeval::tasks::series {

absl::StatusOr<std::string> DefaultFitMetric(const std::vector<std::string>& task_names) {
  if (task_names.empty()) return absl::InvalidArgumentError("a series needs tasks");
  absl::StatusOr<std::unique_ptr<Task>> task = CreateTask(task_names[0]);
  if (!task.ok()) return task.status();
  const std::vector<MetricSpec> metrics = (*task)->metrics();
  if (metrics.empty()) return absl::InvalidArgumentError("the first task has no metric");
  return absl::StrCat(task_names[0], "/", metrics[0].name);
}
namespace {

// The commonsense-reasoning tasks of the paper's CSR average.
const std::set<std::string>& CsrTasks() {
  static const auto* tasks =
      new std::set<std::string>{"piqa",          "hellaswag",  "winogrande", "arc_easy",
                                "arc_challenge", "openbookqa", "boolq",      "social_iqa"};
  return *tasks;
}

std::string TaskOf(const std::string& key) { return key.substr(0, key.find('/')); }
std::string MetricOf(const std::string& key) {
  const size_t slash = key.find('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

// One fit of y against x over the points, with its bootstrap interval.
nlohmann::json Fit(const std::vector<double>& x, const std::vector<double>& y,
                   const std::vector<std::string>& models, const std::string& x_name,
                   const std::string& y_name, const FitOptions& options) {
  nlohmann::json out = {{"x", x_name}, {"y", y_name}, {"models", models}};
  absl::StatusOr<metrics::PowerLaw> law = metrics::FitPowerLaw(x, y);
  if (!law.ok()) {
    out["error"] = std::string(law.status().message());
    return out;
  }
  out["a"] = law->a;
  out["b"] = law->b;
  out["r2"] = law->r2;
  out["points"] = law->points;
  absl::StatusOr<metrics::PowerLawInterval> ci = metrics::BootstrapPowerLaw(
      x, y, options.bootstrap_iterations, options.confidence, options.seed);
  if (ci.ok()) {
    out["interval"] = {{"a", {ci->a.low, ci->a.high}},
                       {"b", {ci->b.low, ci->b.high}},
                       {"confidence", options.confidence},
                       {"resamples", ci->resamples}};
  } else {
    out["interval"] = {{"error", std::string(ci.status().message())}};
  }
  return out;
}

// The points of `indices` as (x, y) of the given fields, skipping those without both.
template <typename X, typename Y>
nlohmann::json FitOver(const std::vector<Point>& points, const std::vector<int>& indices, X x_of,
                       Y y_of, const std::string& x_name, const std::string& y_name,
                       const FitOptions& options) {
  std::vector<double> x, y;
  std::vector<std::string> models;
  for (int i : indices) {
    const double xv = x_of(points[i]), yv = y_of(points[i]);
    if (!(xv > 0) || !(yv > 0) || !std::isfinite(yv)) continue;
    x.push_back(xv);
    y.push_back(yv);
    models.push_back(points[i].checkpoint.model);
  }
  return Fit(x, y, models, x_name, y_name, options);
}

double MetricValue(const Point& p, const std::string& key) {
  auto it = p.metrics.find(key);
  return it == p.metrics.end() ? NAN : it->second;
}

// For each distinct value of `group` among `indices`, the index with the largest `by`.
template <typename G, typename B>
std::vector<int> LargestPerGroup(const std::vector<Point>& points, const std::vector<int>& indices,
                                 G group, B by) {
  std::map<double, int> best;
  for (int i : indices) {
    const double g = group(points[i]);
    if (!(g > 0)) continue;
    auto [it, inserted] = best.emplace(g, i);
    if (!inserted && by(points[i]) > by(points[it->second])) it->second = i;
  }
  std::vector<int> out;
  out.reserve(best.size());
  for (const auto& [g, i] : best) out.push_back(i);
  return out;
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "";
  return absl::StrFormat("%.10g", v);
}

}  // namespace

absl::StatusOr<std::vector<Checkpoint>> ParseSeriesFile(const std::string& json_text) {
  nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("checkpoints") ||
      !doc["checkpoints"].is_array()) {
    return absl::InvalidArgumentError(
        "series file: expected a JSON object with a \"checkpoints\" array");
  }
  std::vector<Checkpoint> out;
  std::set<std::string> seen;
  int index = 0;
  for (const nlohmann::json& e : doc["checkpoints"]) {
    const std::string where = absl::StrCat("series file: checkpoint ", index++);
    if (!e.is_object() || !e.contains("model") || !e["model"].is_string() ||
        e["model"].get<std::string>().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has no \"model\" name"));
    }
    Checkpoint c;
    c.model = e["model"].get<std::string>();
    if (!seen.insert(c.model).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": model '", c.model, "' repeated"));
    }
    c.architecture = e.value("architecture", std::string());
    for (auto [field, target] :
         {std::pair{"parameters", &c.parameters}, std::pair{"tokens", &c.tokens},
          std::pair{"compute", &c.compute}}) {
      if (!e.contains(field)) continue;
      if (!e[field].is_number() || e[field].get<double>() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, " ('", c.model, "'): \"", field, "\" must be a number >= 0"));
      }
      *target = e[field].get<double>();
    }
    if (c.compute == 0) c.compute = 6.0 * c.parameters * c.tokens;
    if (e.contains("step") && e["step"].is_number_integer()) c.step = e["step"].get<int64_t>();
    out.push_back(std::move(c));
  }
  if (out.empty()) return absl::InvalidArgumentError("series file: no checkpoints");
  return out;
}

nlohmann::json SeriesJson(const std::vector<Point>& points, const FitOptions& options) {
  nlohmann::json checkpoints = nlohmann::json::array();
  std::map<std::string, std::vector<int>> by_architecture;
  std::set<std::string> metric_keys;
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const Checkpoint& c = p.checkpoint;
    checkpoints.push_back({{"model", c.model},
                           {"model_hash", p.model_hash},
                           {"architecture", c.architecture},
                           {"parameters", c.parameters},
                           {"tokens", c.tokens},
                           {"compute", c.compute},
                           {"step", c.step},
                           {"job", p.job_id},
                           {"requests", p.requests},
                           {"requests_cached", p.requests_cached},
                           {"metrics", p.metrics}});
    by_architecture[c.architecture].push_back(static_cast<int>(i));
    for (const auto& [key, value] : p.metrics) metric_keys.insert(key);
  }
  auto compute = [](const Point& p) { return p.checkpoint.compute; };
  auto parameters = [](const Point& p) { return p.checkpoint.parameters; };
  auto tokens = [](const Point& p) { return p.checkpoint.tokens; };
  const std::string& m = options.metric;
  auto loss = [&](const Point& p) { return MetricValue(p, m); };
  nlohmann::json fits = nlohmann::json::object();
  for (const auto& [architecture, indices] : by_architecture) {
    nlohmann::json f;
    f["loss_vs_compute"] = FitOver(points, indices, compute, loss, "compute", m, options);
    f["loss_vs_parameters"] = FitOver(points, LargestPerGroup(points, indices, parameters, tokens),
                                      parameters, loss, "parameters", m, options);
    f["loss_vs_tokens"] = FitOver(points, LargestPerGroup(points, indices, tokens, parameters),
                                  tokens, loss, "tokens", m, options);
    // The compute-optimal frontier among the points that have the metric and a compute.
    std::vector<int> usable;
    std::vector<double> c, l;
    for (int i : indices) {
      if (compute(points[i]) > 0 && std::isfinite(loss(points[i]))) {
        usable.push_back(i);
        c.push_back(compute(points[i]));
        l.push_back(loss(points[i]));
      }
    }
    std::vector<int> frontier;
    for (int k : metrics::ComputeOptimalFrontier(c, l)) frontier.push_back(usable[k]);
    f["optimal_parameters_vs_compute"] =
        FitOver(points, frontier, compute, parameters, "compute", "parameters", options);
    f["optimal_tokens_vs_compute"] =
        FitOver(points, frontier, compute, tokens, "compute", "tokens", options);
    nlohmann::json others = nlohmann::json::object();
    for (const std::string& key : metric_keys) {
      if (key == m) continue;
      others[key] = FitOver(
          points, indices, compute, [&](const Point& p) { return MetricValue(p, key); }, "compute",
          key, options);
    }
    f["metrics_vs_compute"] = std::move(others);
    fits[architecture.empty() ? "(none)" : architecture] = std::move(f);
  }
  return {{"fit_metric", m},
          {"bootstrap",
           {{"iterations", options.bootstrap_iterations},
            {"confidence", options.confidence},
            {"seed", options.seed}}},
          {"checkpoints", std::move(checkpoints)},
          {"fits", std::move(fits)}};
}

std::string SeriesCsv(const std::vector<Point>& points) {
  std::set<std::string> keys;
  for (const Point& p : points) {
    for (const auto& [key, value] : p.metrics) keys.insert(key);
  }
  std::string out = "model,model_hash,architecture,parameters,tokens,compute,step";
  for (const std::string& key : keys) absl::StrAppend(&out, ",", key);
  out += "\n";
  for (const Point& p : points) {
    const Checkpoint& c = p.checkpoint;
    absl::StrAppend(&out, c.model, ",", p.model_hash, ",", c.architecture, ",",
                    Number(c.parameters), ",", Number(c.tokens), ",", Number(c.compute), ",",
                    c.step);
    for (const std::string& key : keys) absl::StrAppend(&out, ",", Number(MetricValue(p, key)));
    out += "\n";
  }
  return out;
}

std::string SeriesTable(const std::vector<Point>& points, const std::string& metric) {
  // Each (architecture, N) at its largest D.
  std::map<std::pair<std::string, double>, const Point*> rows;
  std::set<std::string> perplexities;
  bool has_csr = false, has_niah = false, has_scrolls = false;
  for (const Point& p : points) {
    auto key = std::make_pair(p.checkpoint.architecture, p.checkpoint.parameters);
    auto [it, inserted] = rows.emplace(key, &p);
    if (!inserted && p.checkpoint.tokens > it->second->checkpoint.tokens) it->second = &p;
    for (const auto& [k, v] : p.metrics) {
      if (absl::StrContains(MetricOf(k), "perplexity") && k != metric) perplexities.insert(k);
      has_csr |= CsrTasks().count(TaskOf(k)) > 0;
      has_niah |= absl::StartsWith(k, "niah");
      has_scrolls |= absl::StartsWith(k, "scrolls_");
    }
  }
  std::vector<std::string> header = {"architecture", "parameters", "tokens", metric};
  for (const std::string& k : perplexities) header.push_back(k);
  if (has_csr) header.push_back("CSR avg");
  if (has_niah) header.push_back("NIAH weighted acc");
  if (has_scrolls) header.push_back("SCROLLS avg");
  std::string out = absl::StrCat("| ", absl::StrJoin(header, " | "), " |\n|");
  for (size_t i = 0; i < header.size(); ++i) out += i < 3 ? "---|" : "---:|";
  out += "\n";
  for (const auto& [key, point] : rows) {
    // A plain reference for the lambdas below: clang before 16 refuses to capture a
    // structured binding.
    const auto& p = point;
    std::vector<std::string> cells = {key.first, absl::StrFormat("%.3g", key.second),
                                      absl::StrFormat("%.3g", p->checkpoint.tokens),
                                      absl::StrFormat("%.4f", MetricValue(*p, metric))};
    for (const std::string& k : perplexities) {
      cells.push_back(absl::StrFormat("%.2f", MetricValue(*p, k)));
    }
    auto average = [&](auto pick) {
      double sum = 0;
      int n = 0;
      for (const auto& [k, v] : p->metrics) {
        if (pick(k)) {
          sum += v;
          ++n;
        }
      }
      return n ? absl::StrFormat("%.4f", sum / n) : std::string("—");
    };
    if (has_csr) {
      cells.push_back(average([&](const std::string& k) {
        const std::string task = TaskOf(k);
        if (!CsrTasks().count(task)) return false;
        const bool has_norm = p->metrics.count(task + "/acc_norm") > 0;
        return MetricOf(k) == (has_norm ? "acc_norm" : "acc");
      }));
    }
    if (has_niah) {
      cells.push_back(average([](const std::string& k) {
        return absl::StartsWith(k, "niah") && absl::StrContains(k, "weighted");
      }));
    }
    if (has_scrolls) {
      cells.push_back(average([](const std::string& k) {
        return absl::StartsWith(k, "scrolls_") && absl::EndsWith(k, "/score");
      }));
    }
    absl::StrAppend(&out, "| ", absl::StrJoin(cells, " | "), " |\n");
  }
  return out;
}

}  // namespace hgeval::tasks::series
