#include "client/niah_outputs.h"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "tasks/niah/heatmap/niah_heatmap.h"
#include "tasks/niah/output.h"

namespace hgeval::client {
namespace {

absl::Status WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteNiahJobOutputs(const hgeval::v1::Job& job, const std::string& dir) {
  if (!job.has_niah() || job.state() != hgeval::v1::JOB_STATE_SUCCEEDED ||
      job.results_json().empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job '", job.id(), "' is not a finished NIAH job"));
  }
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  const std::filesystem::path out(dir);
  HG_RETURN_IF_ERROR(WriteText(out / niah::kNiahResultsJson, job.results_json()));
  HG_RETURN_IF_ERROR(WriteText(out / niah::kNiahGridCsv, job.results_csv()));
  HG_ASSIGN_OR_RETURN(niah::NiahHeatmapInput input, niah::ParseNiahResultsJson(job.results_json()));
  heatmap::HeatmapOptions options;
  options.title = niah::NiahHeatmapTitle(input.model_name, input.mode);
  options.subtitle = heatmap::NiahMetricsSubtitle(input.metrics);
  options.training_length = input.training_length;
  return heatmap::WriteNiahHeatmapPng(input.grid, options, (out / niah::kNiahHeatmapPng).string());
}

}  // namespace hgeval::client
