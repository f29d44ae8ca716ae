// The ListOps generator against LRA's algorithm run in CPython (lra_benchmarks/data/
// listops.py's generate_tree with random.Random(seed); the expected values below were
// printed by that Python, with insertion-ordered de-duplication), and the evaluator.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tasks/lra/listops_generator.h"

namespace hgeval::tasks::lra {
namespace {

TEST(ListOpsGeneratorTest, ShortTreesEqualCPythonOutput) {
  ListOpsGeneratorOptions options;
  options.seed = 42;
  options.min_length = 10;
  options.max_length = 40;
  auto examples = GenerateListOps(options, 3);
  ASSERT_TRUE(examples.ok()) << examples.status();
  ASSERT_EQ(examples->size(), 3u);
  EXPECT_EQ((*examples)[0].source,
            "( ( ( ( [MIN ( ( ( ( ( ( ( [MIN 0 ) 2 ) 0 ) 6 ) 5 ) 9 ) ] ) ) 7 ) 6 ) ] )");
  EXPECT_EQ((*examples)[0].label, 0);
  EXPECT_EQ((*examples)[1].source,
            "( ( ( ( ( ( ( ( ( [MED 7 ) ( ( ( [MAX 5 ) 9 ) ] ) ) 0 ) 9 ) 5 ) 5 ) ( ( ( ( ( [MED "
            "6 ) 1 ) 3 ) 5 ) ] ) ) 1 ) ] )");
  EXPECT_EQ((*examples)[1].label, 5);
  EXPECT_EQ((*examples)[2].label, 3);
}

TEST(ListOpsGeneratorTest, LraLengthTreesEqualCPythonOutput) {
  ListOpsGeneratorOptions options;  // LRA's defaults: depth 10, 10 args, 500 < len < 2000
  options.seed = 2222;
  auto examples = GenerateListOps(options, 20);
  ASSERT_TRUE(examples.ok()) << examples.status();
  const std::vector<size_t> chars = {7117, 4001, 7249, 6885, 5269, 9694, 9515, 6508,  7989, 5049,
                                     3818, 6159, 3452, 9345, 3964, 3273, 8370, 11067, 6205, 4273};
  const std::vector<int> labels = {0, 9, 9, 7, 7, 0, 0, 6, 7, 6, 1, 5, 7, 3, 2, 5, 0, 0, 2, 4};
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ((*examples)[i].source.size(), chars[i]) << i;
    EXPECT_EQ((*examples)[i].label, labels[i]) << i;
    // The label is the expression's value.
    auto value = EvaluateListOps((*examples)[i].source);
    ASSERT_TRUE(value.ok()) << value.status();
    EXPECT_EQ(*value, labels[i]);
  }
  const std::string& last = (*examples)[19].source;
  EXPECT_EQ(last.substr(last.size() - 80),
            "( ( [MAX 7 ) 9 ) 0 ) 4 ) 4 ) 4 ) 1 ) 2 ) 9 ) ] ) ) 1 ) 8 ) 9 ) 0 ) 7 ) ] ) ) ] )");
}

TEST(ListOpsGeneratorTest, RefusesImpossibleOptions) {
  ListOpsGeneratorOptions options;
  options.min_length = 10;
  options.max_length = 11;
  EXPECT_EQ(GenerateListOps(options, 1).status().code(), absl::StatusCode::kInvalidArgument);
  options = {};
  options.max_args = 1;
  EXPECT_EQ(GenerateListOps(options, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EvaluateListOpsTest, OperatorsAsLra) {
  EXPECT_EQ(*EvaluateListOps("( ( ( [MAX 2 ) 9 ) ] )"), 9);
  EXPECT_EQ(*EvaluateListOps("( ( ( [MIN 2 ) 9 ) ] )"), 2);
  EXPECT_EQ(*EvaluateListOps("( ( ( ( [SM 5 ) 7 ) 9 ) ] )"), 1);
  // Even count: int(np.median([1, 4, 6, 8])) = int(5.0); [1, 8] -> int(4.5) = 4.
  EXPECT_EQ(*EvaluateListOps("( ( ( ( ( [MED 1 ) 8 ) 4 ) 6 ) ] )"), 5);
  EXPECT_EQ(*EvaluateListOps("( ( ( [MED 1 ) 8 ) ] )"), 4);
  EXPECT_FALSE(EvaluateListOps("( ( [MAX 2 ) 9 )").ok());      // no closing ]
  EXPECT_FALSE(EvaluateListOps("( ( [FOO 2 ) 9 ) ] )").ok());  // unknown operator
  EXPECT_FALSE(EvaluateListOps("( [MAX ] )").ok());            // no arguments
}

}  // namespace
}  // namespace hgeval::tasks::lra
