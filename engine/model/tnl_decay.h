// TNL's data-independent decay, the model's and not a backend's: per layer and head,
// decay = exp(-lambda) with lambda = slope_h * (1 - l / (L - 1) + 1e-5), the slopes being
// ALiBi's for the layer's number of heads (specs/models.md §9).
#ifndef HGEVAL_ENGINE_MODEL_TNL_DECAY_H_
#define HGEVAL_ENGINE_MODEL_TNL_DECAY_H_

#include <cstdint>
#include <vector>

namespace hgeval {

// ALiBi slopes of n heads (the upstream get_slopes).
std::vector<double> AlibiSlopes(int64_t n);

// exp(-lambda_h) for each of `heads` heads of layer `layer` of `layers` (layers >= 2).
std::vector<double> TnlDecays(int64_t heads, int64_t layer, int64_t layers);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_TNL_DECAY_H_
