#include "engine/model/top_k.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace hgeval {

std::vector<TokenLogprob> TopKLogprobs(absl::Span<const float> row, int k, double log_normalizer) {
  const size_t count = k <= 0 ? 0 : std::min(static_cast<size_t>(k), row.size());
  std::vector<int32_t> ids(row.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(
      ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(count), ids.end(),
      [&row](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
  std::vector<TokenLogprob> top(count);
  for (size_t j = 0; j < count; ++j) {
    top[j] = {ids[j], static_cast<float>(static_cast<double>(row[ids[j]]) - log_normalizer)};
  }
  return top;
}

}  // namespace hgeval
