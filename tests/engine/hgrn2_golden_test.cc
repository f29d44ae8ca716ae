// hgrn2 (fla) against the upstream reference fixtures in tests/golden/hgrn2: logits, tail
// log-probs and greedy tokens, on the fp32 checkpoint and its BF16 and legacy rewrites.
#include "gtest/gtest.h"
#include "tests/engine/golden_model_check.h"

namespace hgeval {
namespace {

TEST(Hgrn2GoldenTest, MatchesReferenceAndRewrites) { testing::RunGoldenModelChecks("hgrn2"); }

}  // namespace
}  // namespace hgeval
