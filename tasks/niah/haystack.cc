#include "tasks/niah/haystack.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"

namespace hgeval::niah {

absl::StatusOr<std::vector<Essay>> ReadHaystackEssays(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".txt") {
      names.push_back(entry.path().filename().string());
    }
  }
  if (error) {
    return absl::NotFoundError(absl::StrCat("NIAH haystack folder ", dir, ": ", error.message()));
  }
  if (names.empty()) {
    return absl::NotFoundError(absl::StrCat("NIAH haystack folder ", dir, " has no .txt file"));
  }
  std::sort(names.begin(), names.end());
  std::vector<Essay> essays;
  for (const std::string& name : names) {
    std::ifstream in(std::filesystem::path(dir) / name, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", dir, "/", name));
    std::ostringstream text;
    text << in.rdbuf();
    essays.push_back(Essay{name, text.str()});
  }
  return essays;
}

absl::StatusOr<std::vector<int32_t>> BuildHaystackTokens(const Tokenizer& tokenizer,
                                                         const std::vector<Essay>& essays,
                                                         int64_t min_tokens) {
  std::string one_pass;
  for (const Essay& essay : essays) one_pass += essay.text;
  if (one_pass.empty()) return absl::InvalidArgumentError("NIAH haystack is empty");
  std::string text;
  for (;;) {
    text += one_pass;
    HG_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, tokenizer.Encode(text, /*add_special=*/false));
    if (static_cast<int64_t>(tokens.size()) >= min_tokens) return tokens;
    if (tokens.empty()) return absl::InvalidArgumentError("NIAH haystack encodes to nothing");
  }
}

}  // namespace hgeval::niah
