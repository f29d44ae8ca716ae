// Reading task datasets: whole files (gzip-compressed or plain, transparently), lines
// and JSON lines.
#ifndef HGEVAL_TASKS_API_DATA_FILES_H_
#define HGEVAL_TASKS_API_DATA_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace hgeval::tasks {

// The file's bytes; a gzip file is decompressed. NotFound when missing.
absl::StatusOr<std::string> ReadDataFile(const std::string& path);
// Tries `path`, then `path` + ".gz".
absl::StatusOr<std::string> ReadDataFileOrGz(const std::string& path);
bool DataFileExists(const std::string& path);

// Lines split on "\n" (a trailing empty line after the final "\n" is dropped).
std::vector<std::string> SplitLines(const std::string& text);
// One JSON object per non-empty line; errors name the file and line.
absl::StatusOr<std::vector<nlohmann::json>> ParseJsonLines(const std::string& text,
                                                           const std::string& name);

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_API_DATA_FILES_H_
