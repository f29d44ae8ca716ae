// fla's per-layer lower bounds of HGRN and HGRN2 (specs/models.md §2.3; the LRA
// classifiers' OpenNLPLab code uses the same rule), one rule for both backends.
#ifndef HGEVAL_ENGINE_MODEL_LOWER_BOUNDS_H_
#define HGEVAL_ENGINE_MODEL_LOWER_BOUNDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/loader/checkpoint.h"

namespace hgeval {

// P = softmax over the layer axis of `raw` ([layers, width] row-major), per channel;
// LB = cumsum(P) - P[0], summed from P[1] so nothing cancels. Row l is layer l's bound
// (row 0 is all zeros). Computed in double, returned as float.
std::vector<std::vector<float>> LowerBoundsFromLogits(const std::vector<float>& raw, int64_t layers,
                                                      int64_t width);

// Reads the tensor `name` (fla: `model.lower_bounds`) of shape [layers, width] and applies
// LowerBoundsFromLogits.
absl::StatusOr<std::vector<std::vector<float>>> ReadLowerBounds(const Checkpoint& checkpoint,
                                                                const std::string& name,
                                                                int64_t layers, int64_t width);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_LOWER_BOUNDS_H_
