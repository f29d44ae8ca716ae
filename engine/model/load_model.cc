#include "engine/model/load_model.h"

#include <algorithm>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu/cpu_models.h"
#include "engine/cpu/host_budgeted_model.h"
#include "engine/cpu/thread_limited_model.h"
#include "engine/util/memory_budget.h"
#include "engine/util/status_macros.h"
#if HGEVAL_HAVE_CUDA
#include "engine/cuda/cuda_models.h"
#endif

namespace hgeval {

bool CudaAvailable() {
#if HGEVAL_HAVE_CUDA
  return cuda::DeviceCount() > 0;
#else
  return false;
#endif
}

namespace {

// The config's layer count against the weights present, before any backend sizes
// per-layer structures from it: a config claiming 10^7 layers used to allocate gigabytes
// before the first missing tensor was noticed.
absl::Status CheckLayerCount(const Checkpoint& checkpoint, const ModelConfig& config) {
  int64_t present = 0;
  for (const std::string& name : checkpoint.TensorNames()) {
    // "...layers.<index>.<rest>" in every family's naming (model., backbone.).
    const size_t at = name.find("layers.");
    if (at == std::string::npos || (at > 0 && name[at - 1] != '.')) continue;
    size_t i = at + 7;
    int64_t index = 0;
    bool digits = false;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && index < (int64_t{1} << 40)) {
      index = index * 10 + (name[i] - '0');
      digits = true;
      ++i;
    }
    if (digits && i < name.size() && name[i] == '.') present = std::max(present, index + 1);
  }
  if (config.num_layers > present) {
    return absl::InvalidArgumentError(
        absl::StrCat(checkpoint.source(), ": config.json declares ", config.num_layers,
                     " layers but the checkpoint holds weights for ", present));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> BuildModel(const Checkpoint& checkpoint,
                                                  const LoadOptions& options) {
  HG_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(checkpoint.config()));
  HG_RETURN_IF_ERROR(CheckLayerCount(checkpoint, config));
  if (options.dtype != "fp32" && options.dtype != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype must be fp32 or bf16, got '", options.dtype, "'"));
  }
  if (options.max_context < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_context must be >= 0 (0: max_position_embeddings), got ", options.max_context));
  }
  if (absl::StartsWith(options.device, "cuda")) {
#if HGEVAL_HAVE_CUDA
    return cuda::BuildCudaModel(checkpoint, config, options);
#else
    return absl::FailedPreconditionError(
        "this build has no CUDA backend (configure with nvcc available); use --device cpu");
#endif
  }
  if (options.device != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("device must be cpu, cuda or cuda:N, got '", options.device, "'"));
  }
  if (options.dtype != "fp32") {
    return absl::InvalidArgumentError("the CPU backend computes in fp32 only (--dtype fp32)");
  }
  if (options.threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads must be >= 0 (0: all cores), got ", options.threads));
  }
  MemoryBudget& host = HostMemoryBudget();
  if (!options.host_memory.empty()) {
    // A fraction is of what the host has now, beside what the budget already holds.
    HG_ASSIGN_OR_RETURN(size_t limit,
                        ParseMemorySize(options.host_memory, HostAvailableBytes() + host.held()));
    if (limit > 0) host.SetLimit(limit);
  }
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Model> model,
                      cpu::BuildCpuModel(checkpoint, config, options.max_context));
  HG_ASSIGN_OR_RETURN(model, cpu::HostBudgetedModel::Wrap(std::move(model), &host));
  if (options.threads == 0) return model;
  return std::make_unique<cpu::ThreadLimitedModel>(std::move(model), options.threads);
}

absl::StatusOr<std::unique_ptr<Checkpoint>> OpenModelCheckpoint(const std::string& path) {
  if (std::filesystem::is_regular_file(path) && absl::EndsWith(path, ".bin")) {
    return OpenLlama2cCheckpoint(path);
  }
  return OpenCheckpoint(path);
}

absl::StatusOr<std::unique_ptr<Model>> LoadModel(const std::string& path,
                                                 const LoadOptions& options) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, OpenModelCheckpoint(path));
  return BuildModel(*checkpoint, options);
}

}  // namespace hgeval
