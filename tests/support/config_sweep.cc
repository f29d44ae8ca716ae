#include "tests/support/config_sweep.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval::testing {

void PrintTo(const SweepFixture& fixture, std::ostream* os) { *os << fixture.dir; }

const std::vector<std::string>& SweepFamilies() {
  static const std::vector<std::string> families = {"hgrn2", "hgrn",  "gla",
                                                    "llama", "mamba", "tnl"};
  return families;
}

std::vector<SweepFixture> SweepFixtures() {
  std::vector<SweepFixture> out;
  for (const std::string& family : SweepFamilies()) {
    const std::string root = SourcePath("tests/golden/" + family + "_sweep");
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
      if (entry.is_directory()) names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      SweepFixture fixture{family, name, root + "/" + name, ""};
      std::ifstream in(fixture.dir + "/refused");
      if (in) in >> fixture.refused_field;
      out.push_back(std::move(fixture));
    }
  }
  return out;
}

void ExpectRefusedByName(const absl::Status& status, const std::string& field,
                         const std::string& what) {
  ASSERT_FALSE(status.ok()) << what << " must be refused for " << field;
  EXPECT_TRUE(status.code() == absl::StatusCode::kInvalidArgument ||
              status.code() == absl::StatusCode::kUnimplemented)
      << what << ": " << status;
  EXPECT_NE(status.message().find(field), absl::string_view::npos) << what << ": " << status;
}

}  // namespace hgeval::testing
