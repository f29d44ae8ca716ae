// The rows of lm-eval's results table (make_table) from a results JSON: one row per task
// and metric, with the texts lm-eval prints and the numbers behind them. The one reading
// of the table: the text table (tasks::ResultsTable) and the server's web page draw it.
#ifndef HGEVAL_TASKS_REPORT_RESULTS_TABLE_ROWS_H_
#define HGEVAL_TASKS_REPORT_RESULTS_TABLE_ROWS_H_

#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace hgeval::tasks {

struct ResultsTableRow {
  std::string task;     // the results key (the row's task even where `name` is blank)
  std::string name;     // the alias, printed on a task's first row only
  std::string version;  // printed on a task's first row only
  std::string filter;
  std::string shots;
  std::string metric;
  std::string arrow;  // "↑", "↓" or ""
  std::string value_text;
  std::string pm;  // "±" when the metric has a stderr entry
  std::string stderr_text;
  std::optional<double> value;   // when the value is a number
  std::optional<double> stderr;  // when the stderr is a number
};

// The rows of table `column` ("results" for tasks, "groups"); metric keys sorted, as
// lm-eval's make_table sorts them.
std::vector<ResultsTableRow> ResultsTableRows(const nlohmann::json& results,
                                              const std::string& column);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_REPORT_RESULTS_TABLE_ROWS_H_
