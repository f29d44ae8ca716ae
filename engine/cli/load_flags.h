// How to build a model, declared once for every program that loads one (the in-process
// tools and hgeval-server): --device, --dtype, --threads, --max_context, --device_memory,
// --host_memory.
#ifndef HGEVAL_ENGINE_CLI_LOAD_FLAGS_H_
#define HGEVAL_ENGINE_CLI_LOAD_FLAGS_H_

#include "absl/status/statusor.h"
#include "engine/model/load_model.h"

namespace hgeval::cli {

// InvalidArgument for a device other than cpu, cuda or cuda:N (BuildModel checks the rest).
absl::StatusOr<LoadOptions> LoadOptionsFromFlags();

}  // namespace hgeval::cli

#endif  // HGEVAL_ENGINE_CLI_LOAD_FLAGS_H_
