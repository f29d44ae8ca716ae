// The command line of hgeval's programs, one convention for all of them: Abseil flags in
// snake_case, `--help` printing the program's usage and its own flags (not Abseil's) on
// stdout with exit status 0, unknown flags an error.
#ifndef HGEVAL_ENGINE_CLI_COMMAND_LINE_H_
#define HGEVAL_ENGINE_CLI_COMMAND_LINE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hgeval::cli {

// Parses argv with Abseil (an unknown flag or a bad value prints the error and exits 1).
// `--help` (or `-h`) anywhere before `--` prints `usage` and FlagsHelp() and exits 0.
// Returns the positional arguments, argv[0] left out.
std::vector<std::string> ParseCommandLine(int argc, char** argv, absl::string_view usage);

// "  --name=DEFAULT  help" for every flag the program declares, sorted by name.
std::string FlagsHelp();

// InvalidArgument naming the first flag given on the command line that is not in
// `allowed`: programs with subcommands declare all their flags once, and a flag that
// means nothing to the chosen subcommand is refused rather than ignored.
absl::Status RefuseFlagsOutside(int argc, char** argv, absl::Span<const absl::string_view> allowed,
                                absl::string_view command);

// A comma-separated list whose items may carry C escapes (`\n`, `\t`, `\x2c` for a comma,
// `\\`): stop strings and texts given as flags. Empty items are dropped.
struct EscapedList {
  std::vector<std::string> items;
};
bool AbslParseFlag(absl::string_view text, EscapedList* list, std::string* error);
std::string AbslUnparseFlag(const EscapedList& list);

// An EscapedList that knows whether it was given: unset keeps a command's own default,
// `--flag=` (given, empty) means none.
struct OptionalEscapedList {
  bool given = false;
  std::vector<std::string> items;
};
bool AbslParseFlag(absl::string_view text, OptionalEscapedList* list, std::string* error);
std::string AbslUnparseFlag(const OptionalEscapedList& list);

}  // namespace hgeval::cli

#endif  // HGEVAL_ENGINE_CLI_COMMAND_LINE_H_
