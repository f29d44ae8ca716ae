// The flags that pick and load a local checkpoint, declared once for the in-process
// programs (hgeval-engine, hgeval-eval, hgeval-niah): --model, --tokenizer, --device,
// --dtype, --threads, --max_context.
#ifndef HGEVAL_ENGINE_CLI_MODEL_FLAGS_H_
#define HGEVAL_ENGINE_CLI_MODEL_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "engine/model/load_model.h"

ABSL_DECLARE_FLAG(std::string, model);
ABSL_DECLARE_FLAG(std::string, tokenizer);

namespace hgeval::cli {

// --model, or InvalidArgument saying it is required.
absl::StatusOr<std::string> ModelPathFromFlags();

// --device, --dtype, --threads and --max_context; InvalidArgument for a device other than
// cpu, cuda or cuda:N (BuildModel checks the rest).
absl::StatusOr<LoadOptions> LoadOptionsFromFlags();

}  // namespace hgeval::cli

#endif  // HGEVAL_ENGINE_CLI_MODEL_FLAGS_H_
