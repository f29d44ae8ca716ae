#include "server/http/web/web_ui_data.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tasks/harness/progress_bar.h"
#include "tasks/niah/output.h"
#include "tasks/report/results_table_rows.h"

namespace hgeval::server::web {
namespace {

using Json = nlohmann::json;

Json OptionalNumber(const std::optional<double>& value) {
  if (!value.has_value() || !std::isfinite(*value)) return nullptr;
  return *value;
}

Json RowsJson(const nlohmann::json& results, const std::string& column) {
  Json rows = Json::array();
  for (const tasks::ResultsTableRow& row : tasks::ResultsTableRows(results, column)) {
    rows.push_back({{"task", row.task},
                    {"name", row.name},
                    {"version", row.version},
                    {"filter", row.filter},
                    {"n_shot", row.shots},
                    {"metric", row.metric},
                    {"arrow", row.arrow},
                    {"value_text", row.value_text},
                    {"pm", row.pm},
                    {"stderr_text", row.stderr_text},
                    {"value", OptionalNumber(row.value)},
                    {"stderr", OptionalNumber(row.stderr)}});
  }
  return rows;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Cuts strings longer than kMaxSampleTextBytes (at a UTF-8 boundary); true when any was.
bool CutLongStrings(Json* value) {
  bool cut = false;
  if (value->is_string()) {
    std::string& text = value->get_ref<std::string&>();
    if (static_cast<int64_t>(text.size()) > kMaxSampleTextBytes) {
      size_t end = kMaxSampleTextBytes;
      while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
      text = absl::StrCat(text.substr(0, end), "… [", text.size() - end, " more bytes]");
      cut = true;
    }
  } else if (value->is_structured()) {
    for (Json& child : *value) cut = CutLongStrings(&child) || cut;
  }
  return cut;
}

bool Matches(const Json& record, const SamplesQuery& query) {
  if (!query.metric.empty()) {
    if (!record.contains(query.metric)) return false;
    const Json& value = record[query.metric];
    std::string text = value.is_string() ? value.get<std::string>() : value.dump();
    if (value.is_number()) text = absl::StrFormat("%g", value.get<double>());
    if (text != query.metric_value) return false;
  }
  if (!query.contains.empty()) {
    const std::string text = record.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (text.find(query.contains) == std::string::npos) return false;
  }
  return true;
}

}  // namespace

std::string JobStateName(hgeval::v1::JobState state) {
  switch (state) {
    case hgeval::v1::JOB_STATE_QUEUED:
      return "queued";
    case hgeval::v1::JOB_STATE_RUNNING:
      return "running";
    case hgeval::v1::JOB_STATE_SUCCEEDED:
      return "succeeded";
    case hgeval::v1::JOB_STATE_FAILED:
      return "failed";
    case hgeval::v1::JOB_STATE_CANCELLED:
      return "cancelled";
    default:
      return "unspecified";
  }
}

nlohmann::json JobSummaryJson(const hgeval::v1::Job& job, int64_t now_unix_seconds) {
  const int64_t elapsed = std::max<int64_t>(0, now_unix_seconds - job.created_at());
  Json eta = nullptr;
  if (job.state() == hgeval::v1::JOB_STATE_RUNNING) {
    const tasks::Progress progress{.done = job.requests_done(),
                                   .total = job.requests_total(),
                                   .cached = job.requests_cached()};
    if (std::optional<double> left = tasks::EtaSeconds(progress, static_cast<double>(elapsed))) {
      eta = *left;
    }
  }
  Json tasks = Json::array();
  for (const std::string& task : job.tasks()) tasks.push_back(task);
  return {{"id", job.id()},
          {"kind", job.has_niah() ? "niah" : "lm_eval"},
          {"state", JobStateName(job.state())},
          {"model", job.model()},
          {"tasks", tasks},
          {"limit", job.limit()},
          {"log_samples", job.options().log_samples()},
          {"current_task", job.current_task()},
          {"requests_total", job.requests_total()},
          {"requests_done", job.requests_done()},
          {"requests_cached", job.requests_cached()},
          {"error", job.error()},
          {"created_at", job.created_at()},
          {"updated_at", job.updated_at()},
          {"elapsed_seconds", elapsed},
          {"eta_seconds", eta}};
}

nlohmann::json JobListJson(const hgeval::v1::ListJobsResponse& list, int64_t now_unix_seconds) {
  Json jobs = Json::array();
  for (const hgeval::v1::Job& job : list.jobs()) {
    jobs.push_back(JobSummaryJson(job, now_unix_seconds));
  }
  return {{"jobs", jobs}, {"omitted", list.omitted()}, {"now", now_unix_seconds}};
}

nlohmann::json ResultsTableJson(const nlohmann::json& results) {
  return {{"results", RowsJson(results, "results")}, {"groups", RowsJson(results, "groups")}};
}

std::string ResultsTableCsv(const nlohmann::json& results) {
  std::string csv = "table,task,filter,n-shot,metric,value,stderr\n";
  for (const std::string column : {"results", "groups"}) {
    for (const tasks::ResultsTableRow& row : tasks::ResultsTableRows(results, column)) {
      auto number = [](const std::optional<double>& v) {
        return v.has_value() ? absl::StrFormat("%.17g", *v) : std::string();
      };
      absl::StrAppend(&csv, column, ",", CsvField(row.task), ",", CsvField(row.filter), ",",
                      row.shots, ",", CsvField(row.metric), ",",
                      row.value.has_value() ? number(row.value) : CsvField(row.value_text), ",",
                      number(row.stderr), "\n");
    }
  }
  return csv;
}

nlohmann::json SamplesPageJson(const nlohmann::json& results, const SamplesQuery& query) {
  Json tasks = Json::array();
  const bool has_samples =
      results.is_object() && results.contains("samples") && results["samples"].is_object();
  if (has_samples) {
    for (const auto& [task, records] : results["samples"].items()) tasks.push_back(task);
  }
  if (!has_samples) {
    return {{"error", "this job kept no samples (submit it with log_samples)"}, {"tasks", tasks}};
  }
  const std::string task =
      query.task.empty() && !tasks.empty() ? tasks[0].get<std::string>() : query.task;
  if (!results["samples"].contains(task)) {
    return {{"error", absl::StrCat("no samples for task '", task, "'")}, {"tasks", tasks}};
  }
  const int64_t page_size = std::clamp<int64_t>(query.page_size, 1, kMaxSamplesPageSize);
  const int64_t page = std::max<int64_t>(0, query.page);
  const Json& records = results["samples"][task];
  Json samples = Json::array();
  int64_t matched = 0;
  int64_t bytes = 0;
  bool truncated = false;
  const int64_t first = page * page_size;
  for (const Json& record : records) {
    if (!Matches(record, query)) continue;
    const int64_t index = matched++;
    if (index < first || index >= first + page_size || truncated) continue;
    Json shown = record;
    if (CutLongStrings(&shown)) shown["_cut"] = true;
    const int64_t size =
        static_cast<int64_t>(shown.dump(-1, ' ', false, Json::error_handler_t::replace).size());
    if (bytes + size > kMaxSamplesAnswerBytes && !samples.empty()) {
      truncated = true;
      continue;
    }
    bytes += size;
    samples.push_back(std::move(shown));
  }
  return {{"task", task},       {"tasks", tasks},        {"total", records.size()},
          {"matched", matched}, {"page", page},          {"page_size", page_size},
          {"samples", samples}, {"truncated", truncated}};
}

nlohmann::json NiahGridJson(const nlohmann::json& niah_results) {
  absl::StatusOr<niah::NiahHeatmapInput> input =
      niah::ParseNiahResultsJson(niah_results.dump(-1, ' ', false, Json::error_handler_t::replace));
  if (!input.ok()) return {{"error", std::string(input.status().message())}};
  Json scores = Json::array();
  for (const std::vector<double>& column : input->grid.scores) {
    Json values = Json::array();
    for (double s : column) values.push_back(std::isnan(s) ? Json(nullptr) : Json(s));
    scores.push_back(values);
  }
  Json cells = Json::array();
  if (niah_results.contains("cells")) {
    for (const Json& cell : niah_results["cells"]) {
      Json shown = cell;
      CutLongStrings(&shown);
      cells.push_back(std::move(shown));
    }
  }
  return {{"title", niah::NiahHeatmapTitle(input->model_name, input->mode)},
          {"model", input->model_name},
          {"mode", input->mode},
          {"training_length", input->training_length},
          {"lengths", input->grid.lengths},
          {"depths", input->grid.depths},
          {"scores", scores},  // scores[length][depth]
          {"cells", cells},
          {"metrics", niah_results.value("metrics", Json::object())}};
}

}  // namespace hgeval::server::web
