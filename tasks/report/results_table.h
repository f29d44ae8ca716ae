// lm-eval's results table (make_table) as text: the one renderer of every route
// (hgeval-eval, `hgeval run`, the server's jobs). A library of its own (hgeval_report:
// nlohmann-json and Abseil only), so the C++ client prints it without the engine.
#ifndef HGEVAL_TASKS_REPORT_RESULTS_TABLE_H_
#define HGEVAL_TASKS_REPORT_RESULTS_TABLE_H_

#include <string>

#include "nlohmann/json.hpp"

namespace hgeval::tasks {

// lm-eval's markdown table (make_table) from a results JSON: the tasks' table, then the
// groups' one when there are groups.
std::string ResultsTable(const nlohmann::json& results);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_REPORT_RESULTS_TABLE_H_
