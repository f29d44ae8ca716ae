#include "tests/support/all_logits_check.h"

#include <cmath>

#include "gtest/gtest.h"

namespace hgeval::testing {

void ExpectRawLogitsOfEveryPosition(const ForwardOutput& all, const ForwardOutput& scored,
                                    const std::vector<int32_t>& targets, int64_t vocab,
                                    double tolerance) {
  EXPECT_TRUE(scored.logits.empty());
  ASSERT_EQ(all.logits.size(), targets.size() * vocab);
  ASSERT_EQ(scored.logprob.size(), targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    const float* row = all.logits.data() + t * vocab;
    double sum = 0.0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]));
    EXPECT_NEAR(row[targets[t]] - std::log(sum), scored.logprob[t], tolerance) << "position " << t;
  }
}

}  // namespace hgeval::testing
