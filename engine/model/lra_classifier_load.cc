// The LRA classifiers' backend factory. Built into hgeval_engine beside load_model.cc (not
// into the core library) because it calls the CUDA backend when the build has one.
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/cpu/lra_classifier.h"
#include "engine/model/lra_classifier.h"
#include "engine/util/status_macros.h"
#if HGEVAL_HAVE_CUDA
#include "engine/cuda/lra_classifier.h"
#endif

namespace hgeval {

absl::StatusOr<std::unique_ptr<LraClassifier>> BuildLraClassifier(const Checkpoint& checkpoint,
                                                                  const LoadOptions& options) {
  HG_ASSIGN_OR_RETURN(LraClassifierConfig config, ParseLraClassifierConfig(checkpoint.config()));
  if (options.dtype != "fp32") {
    return absl::InvalidArgumentError(
        absl::StrCat("LRA classifiers (", checkpoint.source(),
                     ") compute in fp32 only on every backend; got dtype '", options.dtype,
                     "' (use --dtype fp32)"));
  }
  if (absl::StartsWith(options.device, "cuda")) {
#if HGEVAL_HAVE_CUDA
    return cuda::BuildLraClassifier(checkpoint, config, options.device);
#else
    return absl::FailedPreconditionError(absl::StrCat(
        "LRA classifier ", checkpoint.source(),
        ": this build has no CUDA backend (configure with nvcc available); use --device cpu"));
#endif
  }
  if (options.device != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("device must be cpu, cuda or cuda:N, got '", options.device, "'"));
  }
  return cpu::BuildLraClassifier(checkpoint, config);
}

absl::StatusOr<std::unique_ptr<LraClassifier>> LoadLraClassifier(const std::string& dir,
                                                                 const LoadOptions& options) {
  HG_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint, OpenCheckpoint(dir));
  return BuildLraClassifier(*checkpoint, options);
}

}  // namespace hgeval
