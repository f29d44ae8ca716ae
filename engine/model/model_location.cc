#include "engine/model/model_location.h"

#include <filesystem>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace hgeval {
namespace fs = std::filesystem;
namespace {

bool IsModelBin(const fs::path& p) {
  return p.extension() == ".bin" && !absl::StartsWith(p.filename().string(), "tok");
}

}  // namespace

absl::StatusOr<std::string> CheckpointPath(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  if (!fs::is_directory(path, ec)) return absl::NotFoundError(absl::StrCat(path, " not found"));
  if (fs::exists(fs::path(path) / "config.json", ec)) return path;
  std::vector<std::string> bins;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file() && IsModelBin(entry.path())) bins.push_back(entry.path().string());
  }
  if (bins.size() != 1) {
    return absl::NotFoundError(
        absl::StrCat(path, " holds neither config.json nor exactly one llama2.c model .bin file"));
  }
  return bins[0];
}

std::string DefaultTokenizerPath(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) ? path : fs::path(path).parent_path().string();
}

}  // namespace hgeval
