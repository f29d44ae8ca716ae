// The trained ListOps fixture (tests/tasks/lra_listops_fixture.h): on the first 100
// examples of its test split, the CPU engine's logits are within 1e-4 of PyTorch's (each
// example run alone in float64 there) and the predicted classes, hence the accuracies, are
// equal. The accuracy is reported and must be well above chance (0.1). The CUDA twin is
// tests/cuda/lra_classifier_gpu_test.cc.
#include "tests/tasks/lra_listops_fixture.h"

#include <iostream>
#include <vector>

#include "engine/model/lra_classifier.h"
#include "gtest/gtest.h"

namespace hgeval::testing {
namespace {

TEST(LraListOpsFixtureTest, EngineLogitsAndAccuracyEqualPyTorchs) {
  if (!HaveListOpsFixture()) {
    GTEST_SKIP() << "the trained fixture " << ListOpsFixtureDir()
                 << " is not committed yet: run scripts/train/lra_listops_train.py --out "
                 << ListOpsFixtureDir() << " on a GPU machine (issue 15)";
  }
  auto fixture = LoadListOpsFixture();
  ASSERT_TRUE(fixture.ok()) << fixture.status();
  const int64_t n = static_cast<int64_t>(fixture->inputs.size());
  ASSERT_GE(n, 100);
  auto model = LoadLraClassifier(fixture->dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  std::vector<std::vector<float>> logits;
  ASSERT_TRUE((*model)->Classify(fixture->inputs, &logits).ok());
  const ListOpsComparison c = CompareWithPyTorch(*fixture, logits);
  const double accuracy = static_cast<double>(c.engine_correct) / n;
  std::cout << "lra_listops fixture: max |logit diff| " << c.max_abs_diff << " over " << n
            << " examples; engine accuracy " << accuracy << ", PyTorch "
            << static_cast<double>(c.torch_correct) / n
            << " (script, whole test split: " << fixture->report["test_accuracy"] << ")\n";
  EXPECT_TRUE(c.differing_predictions.empty())
      << c.differing_predictions.size() << " predictions differ, the first in example "
      << c.differing_predictions.front();
  EXPECT_LE(c.max_abs_diff, 1e-4);
  EXPECT_EQ(c.engine_correct, c.torch_correct);
  if (n == 100) EXPECT_NEAR(accuracy, fixture->report["first100_accuracy"].get<double>(), 1e-12);
  EXPECT_GT(accuracy, 0.2) << "not well above chance (0.1)";
}

}  // namespace
}  // namespace hgeval::testing
