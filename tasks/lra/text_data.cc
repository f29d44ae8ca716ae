#include "tasks/lra/text_data.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tasks/api/data_files.h"

namespace hgeval::tasks::lra {
namespace {

// 0 or 1 from "0", "1", "0.0", "1.0"; -1 otherwise.
int BinaryLabel(absl::string_view field) {
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(field), &value)) return -1;
  if (value == 0.0) return 0;
  if (value == 1.0) return 1;
  return -1;
}

}  // namespace

absl::StatusOr<std::vector<TextExample>> ParseImdbJsonl(const std::string& text,
                                                        const std::string& name) {
  absl::StatusOr<std::vector<nlohmann::json>> rows = ParseJsonLines(text, name);
  if (!rows.ok()) return rows.status();
  std::vector<TextExample> examples;
  for (size_t i = 0; i < rows->size(); ++i) {
    const nlohmann::json& row = (*rows)[i];
    const std::string where = absl::StrCat(name, ": record ", i + 1, ": ");
    if (!row.is_object() || !row.contains("text") || !row["text"].is_string()) {
      return absl::InvalidArgumentError(where + "needs a string field 'text'");
    }
    if (!row.contains("label") || !row["label"].is_number_integer() ||
        (row["label"] != 0 && row["label"] != 1)) {
      return absl::InvalidArgumentError(where + "needs an integer field 'label' of 0 or 1");
    }
    examples.push_back({row["text"].get<std::string>(), row["label"].get<int>()});
  }
  return examples;
}

absl::StatusOr<std::vector<TextExample>> ReadImdbJsonl(const std::string& path) {
  absl::StatusOr<std::string> text = ReadDataFile(path);
  if (!text.ok()) return text.status();
  return ParseImdbJsonl(*text, path);
}

absl::StatusOr<std::vector<DocumentPair>> ParseAanTsv(const std::string& text,
                                                      const std::string& name) {
  std::vector<DocumentPair> pairs;
  const std::vector<std::string> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (absl::StripAsciiWhitespace(lines[i]).empty()) continue;
    std::vector<std::string> fields = absl::StrSplit(lines[i], '\t');
    const std::string where = absl::StrCat(name, ": line ", i + 1, ": ");
    if (fields.size() != 5) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected 5 tab-separated fields (label id1 id2 text1 text2), got ",
                       fields.size()));
    }
    DocumentPair pair;
    pair.label = BinaryLabel(fields[0]);
    if (pair.label < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "label must be 0 or 1, got '", fields[0].substr(0, 20), "'"));
    }
    pair.id1 = std::move(fields[1]);
    pair.id2 = std::move(fields[2]);
    pair.text1 = std::move(fields[3]);
    pair.text2 = std::move(fields[4]);
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

absl::StatusOr<std::vector<DocumentPair>> ReadAanTsv(const std::string& path) {
  absl::StatusOr<std::string> text = ReadDataFile(path);
  if (!text.ok()) return text.status();
  return ParseAanTsv(*text, path);
}

}  // namespace hgeval::tasks::lra
