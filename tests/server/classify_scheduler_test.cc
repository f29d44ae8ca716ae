// The classify scheduler: calls queued while a round runs are merged into the next round
// (one LraClassifier::Classify call), each call gets exactly its own examples' logits (the
// same as classifying them alone), cancelled work is dropped, and a stopped scheduler
// refuses new work.
#include "server/exec/classify_scheduler.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/exec/executor.h"
#include "tests/support/paths.h"
#include "tests/tasks/lra_test_checkpoint.h"

namespace hgeval::server {
namespace {

LraInput Tokens(int n, int offset) {
  LraInput input;
  LraDocument doc;
  for (int i = 0; i < n; ++i) doc.tokens.push_back(3 + (i * 7 + offset) % 15);
  input.documents.push_back(doc);
  return input;
}

TEST(ClassifySchedulerTest, QueuedCallsShareARoundAndGetTheirOwnLogits) {
  const std::string dir = testing::MakeTempDir("classify_scheduler");
  testing::LraTestSpec spec;
  spec.d = 16;
  testing::WriteRandomLraCheckpoint(dir, spec);
  auto model = LoadLraClassifier(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  ClassifySchedulerOptions options;
  options.max_batch_positions = 1000;
  ClassifyScheduler scheduler("lra", model->get(), options);

  // A first call over the round budget runs alone and keeps the scheduler busy while
  // three short ones queue up.
  auto busy = std::make_shared<ClassifyWork>();
  busy->inputs.push_back(Tokens(60000, 0));
  ASSERT_TRUE(scheduler.Submit(busy).ok());
  std::vector<std::shared_ptr<ClassifyWork>> works;
  for (int w = 0; w < 3; ++w) {
    auto work = std::make_shared<ClassifyWork>();
    for (int i = 0; i <= w; ++i) work->inputs.push_back(Tokens(20 + 5 * i + w, w + i));
    ASSERT_TRUE(scheduler.Submit(work).ok());
    works.push_back(work);
  }
  auto cancelled = std::make_shared<ClassifyWork>();
  cancelled->inputs.push_back(Tokens(10, 1));
  cancelled->cancelled = true;
  ASSERT_TRUE(scheduler.Submit(cancelled).ok());

  CallControl control;
  for (auto& work : works) {
    ASSERT_TRUE(WaitDone(work->mu, work->done, control).ok());
    absl::MutexLock lock(&work->mu);
    ASSERT_TRUE(work->status.ok()) << work->status;
    ASSERT_EQ(work->logits.size(), work->inputs.size());
    std::vector<std::vector<float>> alone;
    ASSERT_TRUE((*model)->Classify(work->inputs, &alone).ok());
    EXPECT_EQ(work->logits, alone);
  }
  ASSERT_TRUE(WaitDone(cancelled->mu, cancelled->done, control).ok());
  {
    absl::MutexLock lock(&cancelled->mu);
    EXPECT_EQ(cancelled->status.code(), absl::StatusCode::kCancelled);
  }
  const ClassifySchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.rounds, 2) << "the three queued calls ran in one round";
  EXPECT_EQ(stats.max_round_works, 3);
  EXPECT_EQ(stats.examples, 1 + 1 + 2 + 3);

  scheduler.Stop();
  EXPECT_EQ(scheduler.Submit(std::make_shared<ClassifyWork>()).code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hgeval::server
