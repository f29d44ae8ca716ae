// Where tests find the repository's fixtures (tests/golden, data/).
#ifndef HGEVAL_TESTS_SUPPORT_PATHS_H_
#define HGEVAL_TESTS_SUPPORT_PATHS_H_

#include <string>

namespace hgeval::testing {

// The repository root: $HGEVAL_SOURCE_DIR if set, else the compiled-in source folder.
std::string SourceDir();
// SourceDir() + "/" + relative.
std::string SourcePath(const std::string& relative);
// A fresh empty temporary folder for this test (removed by the OS's tmp cleaning).
std::string MakeTempDir(const std::string& tag);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SUPPORT_PATHS_H_
