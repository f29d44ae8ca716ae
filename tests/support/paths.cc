#include "tests/support/paths.h"

#include <cstdlib>
#include <filesystem>
#include <random>

namespace hgeval::testing {

std::string SourceDir() {
  if (const char* env = std::getenv("HGEVAL_SOURCE_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return HGEVAL_SOURCE_DIR;
}

std::string SourcePath(const std::string& relative) { return SourceDir() + "/" + relative; }

std::string MakeTempDir(const std::string& tag) {
  std::random_device rd;
  const auto base = std::filesystem::temp_directory_path();
  for (;;) {
    auto dir = base / ("hgeval-" + tag + "-" + std::to_string(rd()));
    if (std::filesystem::create_directory(dir)) return dir.string();
  }
}

}  // namespace hgeval::testing
