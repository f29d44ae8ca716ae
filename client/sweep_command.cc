#include "client/sweep_command.h"

#include <fnmatch.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "tasks/niah/niah_flags.h"
#include "tasks/programs/eval_flags.h"

ABSL_FLAG(std::string, series, "",
          "sweep: the series file (JSON: {\"checkpoints\": [{\"model\", \"architecture\", "
          "\"parameters\", \"tokens\", \"compute\" (default 6ND), \"step\"}]}, docs/series.md).");
ABSL_FLAG(std::vector<std::string>, checkpoints, {},
          "sweep: instead of --series, the server's model names (shell globs, e.g. 'llama_*'), "
          "with no N, D or C (so no scaling fits; the family as architecture).");
ABSL_FLAG(std::string, series_name, "",
          "sweep: the series' name on the server (default: the series file's name without "
          "its extension, or 'checkpoints'); the same name, tasks, limit and options resume "
          "or extend that series.");
ABSL_FLAG(std::string, fit_metric, "",
          "sweep: the metric fitted against C, N and D as TASK/METRIC (default: the first "
          "task's first metric).");

namespace hgeval::client {
namespace v1 = ::hgeval::v1;

namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "hgeval sweep: %s: %s\n", absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return 1;
}

absl::StatusOr<std::vector<tasks::series::Checkpoint>> CheckpointsFromFlags(Client& client) {
  const std::string series = absl::GetFlag(FLAGS_series);
  const std::vector<std::string> patterns = absl::GetFlag(FLAGS_checkpoints);
  if (series.empty() == patterns.empty()) {
    return absl::InvalidArgumentError("give either --series FILE or --checkpoints NAMES");
  }
  if (!series.empty()) {
    std::ifstream in(series);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", series));
    std::stringstream text;
    text << in.rdbuf();
    return tasks::series::ParseSeriesFile(text.str());
  }
  absl::StatusOr<v1::ListModelsResponse> models = client.ListModels();
  if (!models.ok()) return models.status();
  std::vector<tasks::series::Checkpoint> out;
  for (const std::string& pattern : patterns) {
    bool matched = false;
    for (const v1::ModelInfo& m : models->models()) {
      if (fnmatch(pattern.c_str(), m.name().c_str(), 0) != 0) continue;
      matched = true;
      out.push_back({.model = m.name(), .architecture = m.family()});
    }
    if (!matched) {
      return absl::NotFoundError(absl::StrCat("--checkpoints: no model matches '", pattern, "'"));
    }
  }
  return out;
}

}  // namespace

int RunSweepCommand(Client& client, const SweepWatcher& watch, v1::BosMode bos) {
  absl::StatusOr<tasks::EvaluatorOptions> evaluator_options = tasks::EvaluatorOptionsFromFlags();
  if (!evaluator_options.ok()) return Fail(evaluator_options.status());
  const double limit = evaluator_options->limit;
  if (limit != static_cast<int32_t>(limit)) {
    return Fail(absl::InvalidArgumentError("--limit: a whole number of documents per task"));
  }
  absl::StatusOr<std::vector<tasks::series::Checkpoint>> checkpoints = CheckpointsFromFlags(client);
  if (!checkpoints.ok()) return Fail(checkpoints.status());
  SweepOptions options;
  options.checkpoints = *std::move(checkpoints);
  options.tasks = tasks::TaskNamesFromFlags();
  options.limit = static_cast<int32_t>(limit);
  options.job_options.set_bos_mode(bos);
  options.job_options.set_max_length(tasks::MaxLengthFromFlags());
  options.fit.metric = absl::GetFlag(FLAGS_fit_metric);
  options.name = absl::GetFlag(FLAGS_series_name);
  if (options.name.empty()) {
    const std::string file = absl::GetFlag(FLAGS_series);
    options.name = file.empty() ? "checkpoints" : std::filesystem::path(file).stem().string();
  }
  // --output_dir is shared with `hgeval niah`, whose default names its own folder.
  const absl::CommandLineFlag* dir_flag = absl::FindCommandLineFlag("output_dir");
  options.output_dir = dir_flag != nullptr && dir_flag->CurrentValue() != dir_flag->DefaultValue()
                           ? niah::OutputDirFromFlags()
                           : std::string("series_out");
  absl::StatusOr<SweepResult> result = RunSweep(client, options, watch);
  if (!result.ok()) return Fail(result.status());
  int64_t requests = 0, cached = 0;
  for (const tasks::series::Point& p : result->points) {
    requests += p.requests;
    cached += p.requests_cached;
  }
  std::printf("series %s (%s): %zu checkpoints, %lld requests (%lld from the store)\n",
              result->series_id.c_str(), options.name.c_str(), result->points.size(),
              static_cast<long long>(requests), static_cast<long long>(cached));
  std::printf("%s", tasks::series::SeriesTable(result->points,
                                               result->report["fit_metric"].get<std::string>())
                        .c_str());
  for (const auto& [arch, fits] : result->report["fits"].items()) {
    const nlohmann::json& f = fits["loss_vs_compute"];
    if (f.contains("b")) {
      std::printf("%s: %s = %.4g * C^%.4f  (95%% interval of the exponent %.4f .. %.4f)\n",
                  arch.c_str(), result->report["fit_metric"].get<std::string>().c_str(),
                  f["a"].get<double>(), f["b"].get<double>(),
                  f["interval"].value("b", nlohmann::json::array({NAN, NAN}))[0].get<double>(),
                  f["interval"].value("b", nlohmann::json::array({NAN, NAN}))[1].get<double>());
    }
  }
  std::printf("wrote %s/{%s,%s,%s,%s,%s}\n", options.output_dir.c_str(), kSeriesResultsJson,
              kSeriesPointsCsv, kSeriesTableMd, kSeriesComputePng, kSeriesParametersPng);
  return 0;
}

}  // namespace hgeval::client
