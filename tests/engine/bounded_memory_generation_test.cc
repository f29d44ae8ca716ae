// Generation under a memory budget (DecodeBatch): when the host budget fits only a few
// sequences' states at once, the others wait for room and start later, and every
// sequence's tokens equal those of an unbounded run; a sequence that cannot fit even
// alone fails on its own while the others finish.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/generation.h"
#include "engine/util/memory_budget.h"
#include "gtest/gtest.h"
#include "tests/engine/engine_test_models.h"
#include "tests/support/scoped_budget_limit.h"

namespace hgeval {
namespace {

std::vector<GenerateRequest> Requests(int64_t vocab, int count, int prompt_tokens) {
  std::mt19937 rng(77);
  std::vector<GenerateRequest> requests(count);
  for (int i = 0; i < count; ++i) {
    requests[i].prompt.resize(prompt_tokens + 3 * i);
    for (int32_t& id : requests[i].prompt) {
      id = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    }
    requests[i].max_new_tokens = 6 + i % 4;
  }
  return requests;
}

class BoundedMemoryGenerationTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BoundedMemoryGenerationTest, SequencesWaitForRoomAndGiveTheSameTokens) {
  auto model = testing::LoadTestModel(GetParam());
  ASSERT_NE(model, nullptr);
  const std::vector<GenerateRequest> requests = Requests(model->info().vocab_size, 12, 20);
  auto expected = Generate(*model, nullptr, requests);
  ASSERT_TRUE(expected.ok()) << expected.status();

  MemoryBudget* budget = model->memory_budget();
  ASSERT_NE(budget, nullptr);
  absl::StatusOr<std::vector<GenerateResult>> got;
  {
    // Room for about three sequences at their longest.
    testing::ScopedBudgetLimit limit(budget, budget->held() + 3 * model->StateBytes(80));
    got = Generate(*model, nullptr, requests);
  }
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(expected->size(), got->size());
  for (size_t i = 0; i < got->size(); ++i) {
    EXPECT_EQ((*expected)[i].tokens, (*got)[i].tokens) << "request " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Families, BoundedMemoryGenerationTest,
                         ::testing::ValuesIn(testing::EngineTestModels()), testing::ModelTestName);

TEST(BoundedMemoryGeneration, SequenceLargerThanTheBudgetFailsAlone) {
  auto model = testing::LoadTestModel("tests/golden/llama");
  ASSERT_NE(model, nullptr);
  MemoryBudget* budget = model->memory_budget();
  ASSERT_NE(budget, nullptr);
  std::vector<GenerateRequest> requests = Requests(model->info().vocab_size, 3, 10);
  requests[1].prompt.resize(300, 7);  // far more than the budget below holds
  testing::ScopedBudgetLimit limit(budget, budget->held() + 2 * model->StateBytes(40));
  DecodeBatch batch(model.get(), nullptr);
  std::vector<int64_t> ids;
  for (const GenerateRequest& r : requests) {
    auto id = batch.Add(r);
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  for (int step = 0;
       step < 100 && !(batch.finished(ids[0]) && batch.finished(ids[1]) && batch.finished(ids[2]));
       ++step) {
    absl::StatusOr<std::vector<int64_t>> stepped = batch.Step();
    ASSERT_TRUE(stepped.ok()) << stepped.status();
  }
  EXPECT_TRUE(batch.status(ids[0]).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(batch.status(ids[1]))) << batch.status(ids[1]);
  EXPECT_TRUE(batch.status(ids[2]).ok());
  EXPECT_FALSE(batch.Take(ids[0]).tokens.empty());
  EXPECT_FALSE(batch.Take(ids[2]).tokens.empty());
}

}  // namespace
}  // namespace hgeval
