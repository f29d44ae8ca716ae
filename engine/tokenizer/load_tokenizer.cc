// LoadTokenizer: picks the implementation from the file name (or the folder's contents).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_factories.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", path.string()));
  return std::move(buffer).str();
}

// tokenizer_config.json beside `file`, or "" when there is none.
absl::StatusOr<std::string> ReadConfigBeside(const fs::path& file) {
  const fs::path config = file.parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::is_regular_file(config, ec)) return std::string();
  return ReadFile(config);
}

bool IsLlama2cName(const std::string& name) {
  return absl::StartsWith(name, "tok") && absl::EndsWith(name, ".bin");
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadFile(const fs::path& path) {
  const std::string name = path.filename().string();
  HG_ASSIGN_OR_RETURN(std::string contents, ReadFile(path));
  absl::StatusOr<std::unique_ptr<Tokenizer>> result;
  if (absl::EndsWith(name, ".json")) {
    HG_ASSIGN_OR_RETURN(std::string config, ReadConfigBeside(path));
    result = LoadHfTokenizerFromJson(contents, config);
  } else if (absl::EndsWith(name, ".model")) {
    HG_ASSIGN_OR_RETURN(std::string config, ReadConfigBeside(path));
    result = MakeSentencePieceTokenizer(contents, config);
  } else if (absl::EndsWith(name, ".tiktoken")) {
    result = MakeTiktokenTokenizer(contents, path.stem().string());
  } else if (IsLlama2cName(name)) {
    result = MakeLlama2cTokenizer(contents);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown tokenizer file type: ", path.string(),
                     " (expected tokenizer.json, *.model, *.tiktoken or tok*.bin)"));
  }
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat(path.string(), ": ", result.status().message()));
  }
  return result;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path_string) {
  const fs::path path(path_string);
  std::error_code ec;
  if (!fs::exists(path, ec))
    return absl::NotFoundError(absl::StrCat("no such path: ", path_string));
  if (!fs::is_directory(path, ec)) return LoadFile(path);

  for (const char* preferred : {"tokenizer.json", "tokenizer.model"}) {
    if (fs::is_regular_file(path / preferred, ec)) return LoadFile(path / preferred);
  }
  std::vector<fs::path> candidates;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (absl::EndsWith(name, ".tiktoken") || IsLlama2cName(name)) {
      candidates.push_back(entry.path());
    }
  }
  if (candidates.size() == 1) return LoadFile(candidates[0]);
  if (candidates.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no tokenizer in ", path_string,
                     " (looked for tokenizer.json, tokenizer.model, *.tiktoken, tok*.bin)"));
  }
  std::vector<std::string> names;
  for (const auto& c : candidates) names.push_back(c.filename().string());
  return absl::InvalidArgumentError(
      absl::StrCat("several tokenizer files in ", path_string, ": ", absl::StrJoin(names, ", ")));
}

}  // namespace hgeval
