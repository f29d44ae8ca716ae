#include "tasks/lra/listops_data.h"

#include <cstddef>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tasks/api/data_files.h"

namespace hgeval::tasks::lra {

absl::StatusOr<std::vector<ListOpsExample>> ParseListOpsTsv(const std::string& text,
                                                            const std::string& name) {
  std::vector<std::string> lines = SplitLines(text);
  if (lines.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": empty file"));
  std::vector<std::string> header = absl::StrSplit(lines[0], '\t');
  int source_column = -1;
  int target_column = -1;
  for (size_t c = 0; c < header.size(); ++c) {
    absl::string_view column = absl::StripAsciiWhitespace(header[c]);
    if (column == "Source") source_column = static_cast<int>(c);
    if (column == "Target") target_column = static_cast<int>(c);
  }
  if (source_column < 0 || target_column < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name,
                     ": line 1: the header must name the columns Source and Target "
                     "(tab-separated), got '",
                     lines[0].substr(0, 80), "'"));
  }
  const size_t columns = header.size();
  std::vector<ListOpsExample> examples;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (absl::StripAsciiWhitespace(lines[i]).empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(lines[i], '\t');
    const std::string where = absl::StrCat(name, ": line ", i + 1, ": ");
    if (fields.size() != columns) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected ", columns, " tab-separated fields, got ", fields.size()));
    }
    ListOpsExample example;
    example.source = std::string(absl::StripAsciiWhitespace(fields[source_column]));
    absl::string_view target = absl::StripAsciiWhitespace(fields[target_column]);
    if (target.size() != 1 || target[0] < '0' || target[0] > '9') {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "Target must be a digit 0-9, got '", std::string(target), "'"));
    }
    example.label = target[0] - '0';
    if (example.source.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "empty Source expression"));
    }
    examples.push_back(std::move(example));
  }
  return examples;
}

absl::StatusOr<std::vector<ListOpsExample>> ReadListOpsTsv(const std::string& path) {
  absl::StatusOr<std::string> text = ReadDataFile(path);
  if (!text.ok()) return text.status();
  return ParseListOpsTsv(*text, path);
}

std::string ListOpsTsv(const std::vector<ListOpsExample>& examples) {
  std::string out = "Source\tTarget\n";
  for (const ListOpsExample& example : examples) {
    absl::StrAppend(&out, example.source, "\t", example.label, "\n");
  }
  return out;
}

}  // namespace hgeval::tasks::lra
