#include "engine/cli/command_line.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hgeval::cli {
namespace {

// Abseil's own flags (--flagfile, --helpfull, ...) are declared in its sources.
bool IsProgramFlag(const absl::CommandLineFlag& flag) {
  return !absl::StrContains(flag.Filename(), "absl/");
}

bool AsksForHelp(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-h" || arg == "-help") return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> ParseCommandLine(int argc, char** argv, absl::string_view usage) {
  if (AsksForHelp(argc, argv)) {
    std::printf("%s\nFlags:\n%s", std::string(usage).c_str(), FlagsHelp().c_str());
    std::exit(0);
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  return std::vector<std::string>(positional.begin() + 1, positional.end());
}

std::string FlagsHelp() {
  std::vector<const absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (IsProgramFlag(*flag)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(),
            [](const auto* a, const auto* b) { return a->Name() < b->Name(); });
  std::string out;
  for (const absl::CommandLineFlag* flag : flags) {
    absl::StrAppend(&out, "  --", flag->Name(), "=", flag->DefaultValue(), "\n");
    // The help text, wrapped at 88 columns under the flag.
    std::string line = "     ";
    for (absl::string_view word : absl::StrSplit(flag->Help(), ' ', absl::SkipEmpty())) {
      if (line.size() + 1 + word.size() > 88 && line.size() > 5) {
        absl::StrAppend(&out, line, "\n");
        line = "     ";
      }
      absl::StrAppend(&line, " ", word);
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

absl::Status RefuseFlagsOutside(int argc, char** argv, absl::Span<const absl::string_view> allowed,
                                absl::string_view command) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) continue;
    std::string name(arg.substr(0, arg.find('=')));
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no")) {  // --noNAME of a boolean flag
      name = name.substr(2);
      flag = absl::FindCommandLineFlag(name);
    }
    if (flag == nullptr || !IsProgramFlag(*flag)) continue;
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " does not apply to ", command, " (see ", command, " --help)"));
    }
  }
  return absl::OkStatus();
}

bool AbslParseFlag(absl::string_view text, EscapedList* list, std::string* error) {
  list->items.clear();
  if (text.empty()) return true;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::string unescaped;
    if (!absl::CUnescape(item, &unescaped, error)) return false;
    list->items.push_back(std::move(unescaped));
  }
  return true;
}

std::string AbslUnparseFlag(const EscapedList& list) {
  std::vector<std::string> escaped;
  for (const std::string& item : list.items) {
    escaped.push_back(absl::StrReplaceAll(absl::CEscape(item), {{",", "\\x2c"}}));
  }
  return absl::StrJoin(escaped, ",");
}

bool AbslParseFlag(absl::string_view text, OptionalEscapedList* list, std::string* error) {
  EscapedList parsed;
  if (!AbslParseFlag(text, &parsed, error)) return false;
  list->given = true;
  list->items = std::move(parsed.items);
  return true;
}

std::string AbslUnparseFlag(const OptionalEscapedList& list) {
  return list.given ? AbslUnparseFlag(EscapedList{list.items}) : "(unset)";
}

}  // namespace hgeval::cli
