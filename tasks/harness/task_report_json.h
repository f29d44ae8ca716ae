// A TaskReport as JSON and back, exactly: metric values and stderrs are kept as their
// IEEE-754 bit patterns (NaN "N/A" stderrs included), so a report written by one process
// (a server finishing one shard of a job) and read by another gives bit-identical results.
#ifndef HGEVAL_TASKS_HARNESS_TASK_REPORT_JSON_H_
#define HGEVAL_TASKS_HARNESS_TASK_REPORT_JSON_H_

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tasks/harness/evaluator.h"

namespace hgeval::tasks {

nlohmann::json TaskReportToJson(const TaskReport& report);
// INVALID_ARGUMENT naming what is missing or malformed.
absl::StatusOr<TaskReport> TaskReportFromJson(const nlohmann::json& json);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_HARNESS_TASK_REPORT_JSON_H_
