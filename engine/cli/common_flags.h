// Flags more than one program has, declared once (each in an object of its own, so a
// program gets one only when it reads it):
//   --bos (bos_flag.cc): the BOS regime, `tokenizer` (lm-eval >= 0.4.9.2, the default on
//     every route) or `none` (lm-eval <= 0.4.9.1);
//   --progress (progress_flag.cc): the progress bar and run summary on stderr.
#ifndef HGEVAL_ENGINE_CLI_COMMON_FLAGS_H_
#define HGEVAL_ENGINE_CLI_COMMON_FLAGS_H_

#include "absl/status/statusor.h"

namespace hgeval::cli {

// True for `--bos=tokenizer`, false for `none`; InvalidArgument for anything else.
absl::StatusOr<bool> TokenizerBosFromFlags();

bool ProgressFromFlags();

}  // namespace hgeval::cli

#endif  // HGEVAL_ENGINE_CLI_COMMON_FLAGS_H_
