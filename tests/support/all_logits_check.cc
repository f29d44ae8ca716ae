#include "tests/support/all_logits_check.h"

#include <cmath>
#include <memory>

#include "gtest/gtest.h"

namespace hgeval::testing {

void ExpectAllLogitsMatchScoring(Model& model, const std::vector<int32_t>& tokens,
                                 const std::vector<int32_t>& targets, double tolerance) {
  const int64_t vocab = model.info().vocab_size;
  std::unique_ptr<SequenceState> a = model.NewState(), b = model.NewState();
  ForwardItem scored;
  scored.tokens = tokens;
  scored.targets = targets;
  scored.state = a.get();
  ForwardItem all = scored;
  all.state = b.get();
  all.want_all_logits = true;
  std::vector<ForwardOutput> out(2);
  const absl::Status status = model.Forward({scored, all}, absl::MakeSpan(out));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(out[0].logits.empty());
  ASSERT_EQ(out[1].logits.size(), tokens.size() * vocab);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* row = out[1].logits.data() + t * vocab;
    double sum = 0.0;
    for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]));
    EXPECT_NEAR(row[targets[t]] - std::log(sum), out[0].logprob[t], tolerance) << "position " << t;
  }
  EXPECT_EQ(a->position(), static_cast<int64_t>(tokens.size()));
  EXPECT_EQ(b->position(), static_cast<int64_t>(tokens.size()));
}

}  // namespace hgeval::testing
