// The CPU forward pass of the LRA classifiers (engine/model/lra_classifier.h), fp32.
#ifndef HGEVAL_ENGINE_CPU_LRA_CLASSIFIER_H_
#define HGEVAL_ENGINE_CPU_LRA_CLASSIFIER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"
#include "engine/model/lra_classifier.h"

namespace hgeval::cpu {

absl::StatusOr<std::unique_ptr<LraClassifier>> BuildLraClassifier(
    const Checkpoint& checkpoint, const LraClassifierConfig& config);

}  // namespace hgeval::cpu

#endif  // HGEVAL_ENGINE_CPU_LRA_CLASSIFIER_H_
