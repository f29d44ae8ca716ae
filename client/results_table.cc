#include "client/results_table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace hgeval::client {

std::string FormatResultsTable(const hgeval::v1::Job& job) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"Tasks", "Version", "Filter", "n-shot", "Metric", "", "Value", "", "Stderr"});
  for (const hgeval::v1::TaskResult& task : job.results()) {
    std::map<std::string, double> metrics(task.metrics().begin(), task.metrics().end());
    bool first = true;
    for (const auto& [key, value] : metrics) {
      std::vector<std::string> parts = absl::StrSplit(key, absl::MaxSplits(',', 1));
      const std::string name = parts[0];
      const std::string filter = parts.size() > 1 ? parts[1] : "none";
      if (absl::EndsWith(name, "_stderr")) continue;
      auto stderr_it = metrics.find(absl::StrCat(name, "_stderr,", filter));
      std::string stderr_text = "N/A";
      if (stderr_it != metrics.end() && std::isfinite(stderr_it->second)) {
        stderr_text = absl::StrFormat("%.4f", stderr_it->second);
      }
      rows.push_back({first ? task.task() : "", first ? task.version() : "", filter,
                      absl::StrCat(job.options().num_fewshot()), name, "↑",
                      absl::StrFormat("%.4f", value), "±", stderr_text});
      first = false;
    }
  }
  // Column widths in code points (the arrows and ± are one character wide).
  auto width = [](const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  };
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], width(row[c]));
  }
  std::string out;
  for (size_t r = 0; r < rows.size(); ++r) {
    out += "|";
    for (size_t c = 0; c < rows[r].size(); ++c) {
      const std::string& cell = rows[r][c];
      const bool right = c == 6 || c == 8;
      const std::string pad(widths[c] - width(cell), ' ');
      out += right ? pad + cell : cell + pad;
      out += "|";
    }
    out += "\n";
    if (r == 0) {
      out += "|";
      for (size_t c = 0; c < widths.size(); ++c) {
        const bool right = c == 6 || c == 8;
        out += right ? std::string(std::max<size_t>(widths[c], 1) - 1, '-') + ":"
                     : std::string(std::max<size_t>(widths[c], 1), '-');
        out += "|";
      }
      out += "\n";
    }
  }
  return out;
}

std::string FormatProgress(const hgeval::v1::Job& job, double elapsed_s, int width) {
  const int64_t total = job.requests_total();
  const int64_t done = job.requests_done();
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / total) : 0.0;
  const int filled = static_cast<int>(fraction * width);
  std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string eta = "--:--";
  const int64_t computed_done = done - job.requests_cached();
  if (total > 0 && done > 0 && done < total && elapsed_s > 0.5 && computed_done > 0) {
    const double rate = computed_done / elapsed_s;
    const int64_t seconds = static_cast<int64_t>((total - done) / rate);
    eta = absl::StrFormat("%d:%02d:%02d", seconds / 3600, (seconds / 60) % 60, seconds % 60);
  } else if (total > 0 && done >= total) {
    eta = "0:00:00";
  }
  return absl::StrFormat("[%s] %3d%% %d/%d %s (%d cached)  ETA %s  %s", bar,
                         static_cast<int>(fraction * 100), done, total,
                         job.has_niah() ? "cells" : "requests", job.requests_cached(), eta,
                         job.current_task());
}

}  // namespace hgeval::client
