// The flags that pick a local checkpoint, declared once for the in-process programs
// (hgeval-engine, hgeval-eval, hgeval-niah): --model and --tokenizer, and with
// load_flags.h how to build it. (hgeval-server has its own --model, a list of NAME=PATH.)
#ifndef HGEVAL_ENGINE_CLI_MODEL_FLAGS_H_
#define HGEVAL_ENGINE_CLI_MODEL_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "engine/cli/load_flags.h"

ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, tokenizer);

namespace hgeval::cli {

// --model, or InvalidArgument saying it is required.
absl::StatusOr<std::string> ModelPathFromFlags();

}  // namespace hgeval::cli

#endif  // HGEVAL_ENGINE_CLI_MODEL_FLAGS_H_
