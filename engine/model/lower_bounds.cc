#include "engine/model/lower_bounds.h"

#include <algorithm>
#include <cmath>

#include "engine/util/status_macros.h"

namespace hgeval {

std::vector<std::vector<float>> LowerBoundsFromLogits(const std::vector<float>& raw, int64_t layers,
                                                      int64_t width) {
  std::vector<std::vector<float>> bounds(static_cast<size_t>(layers),
                                         std::vector<float>(static_cast<size_t>(width)));
  std::vector<double> p(static_cast<size_t>(layers));
  for (int64_t c = 0; c < width; ++c) {
    double max_value = raw[c];
    for (int64_t l = 1; l < layers; ++l) {
      max_value = std::max<double>(max_value, raw[l * width + c]);
    }
    double sum = 0.0;
    for (int64_t l = 0; l < layers; ++l) {
      p[l] = std::exp(static_cast<double>(raw[l * width + c]) - max_value);
      sum += p[l];
    }
    // cumsum(P) - P[0]: layer l gets P[1] + ... + P[l].
    double cumulative = 0.0;
    for (int64_t l = 0; l < layers; ++l) {
      if (l > 0) cumulative += p[l] / sum;
      bounds[l][c] = static_cast<float>(cumulative);
    }
  }
  return bounds;
}

absl::StatusOr<std::vector<std::vector<float>>> ReadLowerBounds(const Checkpoint& checkpoint,
                                                                const std::string& name,
                                                                int64_t layers, int64_t width) {
  HG_ASSIGN_OR_RETURN(HostTensor raw, checkpoint.ReadFloat(name, {layers, width}));
  return LowerBoundsFromLogits(raw.data, layers, width);
}

}  // namespace hgeval
