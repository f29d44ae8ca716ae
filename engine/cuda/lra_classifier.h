// The CUDA forward pass of the LRA classifiers (engine/model/lra_classifier.h), fp32: the
// same computation as the CPU backend (docs/lra.md), many documents per pass.
#ifndef HGEVAL_ENGINE_CUDA_LRA_CLASSIFIER_H_
#define HGEVAL_ENGINE_CUDA_LRA_CLASSIFIER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/lra_classifier.h"

namespace hgeval::cuda {

// Builds the classifier on `device` ("cuda" or "cuda:N"): FailedPrecondition when no such
// GPU is visible, Unimplemented for an HGRN2 head size (expand_ratio) above
// kMaxLraHeadSize.
absl::StatusOr<std::unique_ptr<LraClassifier>> BuildLraClassifier(const Checkpoint& checkpoint,
                                                                  const LraClassifierConfig& config,
                                                                  const std::string& device);

}  // namespace hgeval::cuda

#endif  // HGEVAL_ENGINE_CUDA_LRA_CLASSIFIER_H_
