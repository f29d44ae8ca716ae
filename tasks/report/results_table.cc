#include "tasks/report/results_table.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tasks/report/results_table_rows.h"

namespace hgeval::tasks {

namespace {

// Code points, as the text is printed: utf8::NextCodePointLenient's steps (a lead byte
// with its continuation bytes is one; any other byte is one U+FFFD), without the engine.
int64_t DisplayWidth(const std::string& s) {
  int64_t count = 0;
  for (size_t i = 0; i < s.size(); ++count) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c >= 0xF0 && c < 0xF8   ? 4
                       : c >= 0xE0 && c < 0xF0 ? 3
                       : c >= 0xC2 && c < 0xE0 ? 2
                                               : 1;
    bool whole = len > 1 && i + len <= s.size();
    for (size_t k = 1; whole && k < len; ++k) {
      whole = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    }
    i += whole ? len : 1;
  }
  return count;
}

std::string Pad(const std::string& s, int64_t width, char align) {
  const int64_t extra = std::max<int64_t>(0, width - DisplayWidth(s));
  if (align == 'r') return std::string(extra, ' ') + s;
  if (align == 'c') return std::string(extra / 2, ' ') + s + std::string(extra - extra / 2, ' ');
  return s + std::string(extra, ' ');
}

// One of lm-eval's make_table tables: column "results" (tasks) or "groups".
std::string TableOf(const nlohmann::json& results, const std::string& column) {
  const std::string first = column == "groups" ? "Groups" : "Tasks";
  const std::vector<std::string> headers = {first, "Version", "Filter", "n-shot", "Metric",
                                            "",    "Value",   "",       "Stderr"};
  const std::string align = "lrlrllrlr";
  std::vector<std::vector<std::string>> rows;
  if (!results.contains(column)) return "";
  for (const ResultsTableRow& row : ResultsTableRows(results, column)) {
    rows.push_back({row.name, row.version, row.filter, row.shots, row.metric, row.arrow,
                    row.value_text, row.pm, row.stderr_text});
  }
  std::vector<int64_t> widths(headers.size(), 3);
  for (size_t c = 0; c < headers.size(); ++c) {
    widths[c] = std::max<int64_t>(widths[c], DisplayWidth(headers[c]));
    for (const auto& row : rows) widths[c] = std::max<int64_t>(widths[c], DisplayWidth(row[c]));
  }
  std::string out = "|";
  for (size_t c = 0; c < headers.size(); ++c) out += Pad(headers[c], widths[c], 'c') + "|";
  out += "\n|";
  for (size_t c = 0; c < headers.size(); ++c) {
    out += align[c] == 'r' ? std::string(widths[c] - 1, '-') + ":" : std::string(widths[c], '-');
    out += "|";
  }
  out += "\n";
  for (const auto& row : rows) {
    out += "|";
    for (size_t c = 0; c < headers.size(); ++c) out += Pad(row[c], widths[c], align[c]) + "|";
    out += "\n";
  }
  return out;
}

}  // namespace

std::string ResultsTable(const nlohmann::json& results) {
  std::string out = TableOf(results, "results");
  // lm-eval prints the groups' table after the tasks' one.
  if (results.contains("groups") && !results["groups"].empty()) {
    out += "\n" + TableOf(results, "groups");
  }
  return out;
}

}  // namespace hgeval::tasks
