// --bos of common_flags.h.
#include <string>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/cli/common_flags.h"

ABSL_FLAG(std::string, bos, "tokenizer",
          "BOS regime for text: tokenizer (the tokenizer's special tokens, e.g. BOS: lm-eval "
          ">= 0.4.9.2, the default everywhere) or none (lm-eval <= 0.4.9.1). An empty context "
          "or prompt starts from BOS either way.");

namespace hgeval::cli {

absl::StatusOr<bool> TokenizerBosFromFlags() {
  const std::string bos = absl::GetFlag(FLAGS_bos);
  if (bos != "tokenizer" && bos != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("--bos must be tokenizer or none, got '", bos, "'"));
  }
  return bos == "tokenizer";
}

}  // namespace hgeval::cli
