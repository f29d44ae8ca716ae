#include "tasks/report/results_table_rows.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hgeval::tasks {

std::vector<ResultsTableRow> ResultsTableRows(const nlohmann::json& results,
                                              const std::string& column) {
  std::vector<ResultsTableRow> rows;
  if (!results.is_object() || !results.contains(column)) return rows;
  for (const auto& [task, entries] : results[column].items()) {
    std::string name = entries.value("alias", task);
    std::string version = "    N/A";
    if (results.contains("versions") && results["versions"].contains(task)) {
      version = absl::StrFormat("%g", results["versions"][task].get<double>());
    }
    std::string shots = "0";
    if (results.contains("n-shot") && results["n-shot"].contains(task)) {
      shots = absl::StrCat(results["n-shot"][task].get<int64_t>());
    }
    std::vector<std::string> keys;
    for (const auto& [key, value] : entries.items()) {
      if (key != "alias") keys.push_back(key);
    }
    std::sort(keys.begin(), keys.end());
    for (const std::string& key : keys) {
      const size_t comma = key.find(',');
      ResultsTableRow row;
      row.task = task;
      row.metric = key.substr(0, comma);
      row.filter = comma == std::string::npos ? "" : key.substr(comma + 1);
      if (row.metric.size() >= 7 && row.metric.compare(row.metric.size() - 7, 7, "_stderr") == 0) {
        continue;
      }
      if (results.contains("higher_is_better") && results["higher_is_better"].contains(task) &&
          results["higher_is_better"][task].contains(row.metric)) {
        row.arrow = results["higher_is_better"][task][row.metric].get<bool>() ? "↑" : "↓";
      }
      const auto& value = entries[key];
      if (value.is_number()) {
        row.value = value.get<double>();
        row.value_text = absl::StrFormat("%.4f", *row.value);
      } else {
        row.value_text = value.dump();
      }
      const std::string stderr_key = row.metric + "_stderr," + row.filter;
      if (entries.contains(stderr_key)) {
        row.pm = "±";
        const auto& se = entries[stderr_key];
        if (se.is_number()) {
          row.stderr = se.get<double>();
          row.stderr_text = absl::StrFormat("%.4f", *row.stderr);
        } else {
          row.stderr_text = "   N/A";
        }
      }
      row.name = name;
      row.version = version;
      row.shots = shots;
      rows.push_back(std::move(row));
      name.clear();
      version.clear();
    }
  }
  return rows;
}

}  // namespace hgeval::tasks
