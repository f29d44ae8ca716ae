#include "tasks/api/data_files.h"

#include <sys/stat.h>
#include <zlib.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hgeval::tasks {

bool DataFileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

absl::StatusOr<std::string> ReadDataFile(const std::string& path) {
  if (!DataFileExists(path)) return absl::NotFoundError(absl::StrCat("no data file ", path));
  gzFile file = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (file == nullptr) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string out;
  char buffer[1 << 16];
  while (true) {
    const int n = gzread(file, buffer, sizeof(buffer));
    if (n < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      return absl::DataLossError(absl::StrCat("reading ", path, ": ", message));
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  gzclose(file);
  return out;
}

absl::StatusOr<std::string> ReadDataFileOrGz(const std::string& path) {
  if (DataFileExists(path)) return ReadDataFile(path);
  return ReadDataFile(path + ".gz");
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

absl::StatusOr<std::vector<nlohmann::json>> ParseJsonLines(const std::string& text,
                                                           const std::string& name) {
  std::vector<nlohmann::json> out;
  size_t line_number = 0;
  for (const std::string& line : SplitLines(text)) {
    ++line_number;
    if (line.empty()) continue;
    nlohmann::json value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded() || !value.is_object()) {
      return absl::DataLossError(absl::StrCat(name, ":", line_number, ": not a JSON object"));
    }
    out.push_back(std::move(value));
  }
  return out;
}

}  // namespace hgeval::tasks
