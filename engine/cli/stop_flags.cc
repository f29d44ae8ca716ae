// The stopping flags of generation_flags.h.
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "engine/cli/command_line.h"
#include "engine/cli/generation_flags.h"

ABSL_FLAG(int, max_tokens, -1,
          "Most tokens to generate (-1: the command's default: hgeval generate 64, "
          "hgeval-engine generate 256, a NIAH cell 32).");
ABSL_FLAG(hgeval::cli::OptionalEscapedList, until, {},
          "Stop strings, comma-separated (C escapes such as \\n; \\x2c for a comma); the text "
          "is cut before the first. Unset: the command's default (none; NIAH: \\n); empty: "
          "none.");
ABSL_FLAG(bool, ignore_eos, false, "Do not stop at the EOS token.");

namespace hgeval::cli {

absl::StatusOr<int> MaxTokensFromFlags(int command_default) {
  const int max_tokens = absl::GetFlag(FLAGS_max_tokens);
  if (max_tokens == -1) return command_default;
  if (max_tokens < 0) return absl::InvalidArgumentError("--max_tokens must be >= 0");
  return max_tokens;
}

std::vector<std::string> UntilFromFlags(const std::vector<std::string>& command_default) {
  const OptionalEscapedList until = absl::GetFlag(FLAGS_until);
  return until.given ? until.items : command_default;
}

bool IgnoreEosFromFlags() { return absl::GetFlag(FLAGS_ignore_eos); }

}  // namespace hgeval::cli
