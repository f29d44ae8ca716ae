// The JSON the web UI's data routes (/ui/api/...) answer, built from the JobService's
// messages and a job's results JSON: pure functions, no I/O (server/http/web/web_ui.h serves
// them).
#ifndef HGEVAL_SERVER_HTTP_WEB_WEB_UI_DATA_H_
#define HGEVAL_SERVER_HTTP_WEB_WEB_UI_DATA_H_

#include <cstdint>
#include <string>

#include "hgeval/v1/jobs.pb.h"
#include "nlohmann/json.hpp"

namespace hgeval::server::web {

// "queued", "running", "succeeded", "failed", "cancelled" (else "unspecified").
std::string JobStateName(hgeval::v1::JobState state);

// A job's row of the jobs page: id, kind ("lm_eval" or "niah"), state, model, tasks,
// progress and ETA (seconds, tasks::EtaSeconds over the time since the job was created;
// null until known and when not running).
nlohmann::json JobSummaryJson(const hgeval::v1::Job& job, int64_t now_unix_seconds);
// {"jobs": [...], "omitted": n, "now": now}.
nlohmann::json JobListJson(const hgeval::v1::ListJobsResponse& list, int64_t now_unix_seconds);

// lm-eval's results table (tasks::ResultsTableRows) of a results JSON:
// {"results": [rows], "groups": [rows]}, each row the printed texts and the numbers.
nlohmann::json ResultsTableJson(const nlohmann::json& results);
// The same rows as CSV: task,filter,n-shot,metric,value,stderr.
std::string ResultsTableCsv(const nlohmann::json& results);

struct SamplesQuery {
  std::string task;
  std::string contains;  // kept when the record's JSON text contains it (case-sensitive)
  std::string metric;    // with metric_value: kept when record[metric] == metric_value
  std::string metric_value;
  int64_t page = 0;  // from 0
  int64_t page_size = 20;
};
// Bounds on one answer of the samples route.
inline constexpr int64_t kMaxSamplesPageSize = 100;
inline constexpr int64_t kMaxSampleTextBytes = 16 << 10;  // a longer string is cut
inline constexpr int64_t kMaxSamplesAnswerBytes = 4 << 20;
// A page of a task's per-sample records (results JSON's "samples"):
// {"task", "tasks" (those with samples), "total" (records in the task), "matched",
//  "page", "page_size", "samples": [...], "truncated"}. Strings longer than
// kMaxSampleTextBytes are cut (the record says so under "_cut"), and the page stops before
// kMaxSamplesAnswerBytes. INVALID_ARGUMENT-like problems are reported as {"error": ...}.
nlohmann::json SamplesPageJson(const nlohmann::json& results, const SamplesQuery& query);

// A NIAH job's grid for the heatmap: {"lengths", "depths", "scores" (depth-major rows of
// the grid, null for cells not run), "cells" (length, depth, score, generated, ...),
// "metrics" (the paper's), "model", "mode"}.
nlohmann::json NiahGridJson(const nlohmann::json& niah_results);

}  // namespace hgeval::server::web

#endif  // HGEVAL_SERVER_HTTP_WEB_WEB_UI_DATA_H_
