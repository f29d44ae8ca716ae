// The model scheduler (server/exec/scheduler.h) on the stories260K checkpoint: calls merged
// into rounds still get exactly the scores of scoring each alone, a generation streams the
// tokens of generating alone, cancelled and expired work is dropped before it runs, the
// generation limit answers "queue full" (retry) and a stopped scheduler refuses work.
#include <memory>
#include <string>
#include <vector>

#include "engine/model/load_model.h"
#include "engine/runtime/generation.h"
#include "engine/runtime/scoring.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "server/exec/executor.h"
#include "server/exec/scheduler.h"
#include "tests/support/paths.h"

namespace hgeval::server {
namespace {

class ModelSchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model =
        LoadModel(testing::SourcePath("data/models/stories260K/stories260K.bin"), LoadOptions());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = *std::move(model);
    auto tokenizer = LoadTokenizer(testing::SourcePath("data/models/stories260K/tok512.bin"));
    ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
    tokenizer_ = *std::move(tokenizer);
  }

  // Distinct requests per call (`seed`), so that a call given another's scores fails.
  std::vector<ScoreRequest> Requests(int seed, int count) {
    std::vector<ScoreRequest> requests;
    for (int i = 0; i < count; ++i) {
      ScoreRequest r;
      for (int t = 0; t < 6 + i + seed; ++t) r.context.push_back(1 + (t * 31 + seed * 7) % 500);
      for (int t = 0; t < 3 + seed % 3; ++t) r.continuation.push_back(2 + (t * 17 + i) % 500);
      requests.push_back(r);
    }
    return requests;
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(ModelSchedulerTest, EachCallGetsTheScoresOfScoringItAlone) {
  ModelScheduler scheduler("stories", model_.get(), tokenizer_.get(), SchedulerOptions());
  std::vector<std::shared_ptr<ScoreWork>> works;
  for (int seed = 0; seed < 5; ++seed) {
    auto work = std::make_shared<ScoreWork>();
    work->requests = Requests(seed, 2 + seed);
    ASSERT_TRUE(scheduler.Submit(work).ok());
    works.push_back(work);
  }
  // Every call finished before scoring alone: the model is the scheduler's while it runs
  // rounds (a model serves one thread at a time; scoring beside it raced for its buffers).
  for (const auto& work : works) {
    ASSERT_TRUE(WaitDone(work->mu, work->done, CallControl()).ok());
  }
  for (int seed = 0; seed < 5; ++seed) {
    ScoreWork& work = *works[seed];
    absl::StatusOr<std::vector<ScoreResult>> alone = Score(*model_, work.requests, ScoreOptions());
    ASSERT_TRUE(alone.ok()) << alone.status();
    absl::MutexLock lock(&work.mu);
    ASSERT_TRUE(work.status.ok()) << work.status;
    ASSERT_EQ(work.results.size(), alone->size());
    for (size_t i = 0; i < alone->size(); ++i) {
      EXPECT_NEAR(work.results[i].logprob, (*alone)[i].logprob, 1e-4) << seed << " " << i;
      EXPECT_EQ(work.results[i].is_greedy, (*alone)[i].is_greedy) << seed << " " << i;
    }
  }
  const SchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.scored_requests, 2 + 3 + 4 + 5 + 6);
  EXPECT_GE(stats.score_rounds, 1);
}

TEST_F(ModelSchedulerTest, AGenerationStreamsTheTokensOfGeneratingAlone) {
  GenerateRequest request;
  request.prompt = {1, 403, 407, 261, 378};
  request.max_new_tokens = 12;
  absl::StatusOr<std::vector<GenerateResult>> alone =
      Generate(*model_, tokenizer_.get(), {request});
  ASSERT_TRUE(alone.ok()) << alone.status();
  ASSERT_FALSE((*alone)[0].tokens.empty());

  ModelScheduler scheduler("stories", model_.get(), tokenizer_.get(), SchedulerOptions());
  auto work = std::make_shared<GenerateWork>();
  work->request = request;
  ASSERT_TRUE(scheduler.Submit(work).ok());
  ASSERT_TRUE(WaitDone(work->mu, work->done, CallControl()).ok());
  absl::MutexLock lock(&work->mu);
  ASSERT_TRUE(work->status.ok()) << work->status;
  EXPECT_EQ(work->tokens, (*alone)[0].tokens);
  EXPECT_EQ(work->result.tokens, (*alone)[0].tokens);
  EXPECT_EQ(work->result.finish_reason, (*alone)[0].finish_reason);
}

TEST_F(ModelSchedulerTest, CancelledAndExpiredWorkIsDroppedBeforeItRuns) {
  ModelScheduler scheduler("stories", model_.get(), tokenizer_.get(), SchedulerOptions());
  auto cancelled = std::make_shared<ScoreWork>();
  cancelled->requests = Requests(1, 3);
  cancelled->cancelled = true;
  auto expired = std::make_shared<ScoreWork>();
  expired->requests = Requests(2, 3);
  expired->deadline = absl::Now() - absl::Seconds(1);
  auto expired_generation = std::make_shared<GenerateWork>();
  expired_generation->request.prompt = {1, 2, 3};
  expired_generation->deadline = absl::Now() - absl::Seconds(1);
  ASSERT_TRUE(scheduler.Submit(cancelled).ok());
  ASSERT_TRUE(scheduler.Submit(expired).ok());
  ASSERT_TRUE(scheduler.Submit(expired_generation).ok());
  for (ScoreWork* work : {cancelled.get(), expired.get()}) {
    ASSERT_TRUE(WaitDone(work->mu, work->done, CallControl()).ok());
  }
  ASSERT_TRUE(WaitDone(expired_generation->mu, expired_generation->done, CallControl()).ok());
  {
    absl::MutexLock lock(&cancelled->mu);
    EXPECT_EQ(cancelled->status.code(), absl::StatusCode::kCancelled) << cancelled->status;
  }
  {
    absl::MutexLock lock(&expired->mu);
    EXPECT_EQ(expired->status.code(), absl::StatusCode::kDeadlineExceeded) << expired->status;
  }
  {
    absl::MutexLock lock(&expired_generation->mu);
    EXPECT_EQ(expired_generation->status.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_TRUE(expired_generation->tokens.empty());
  }
  const SchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.scored_requests, 0);
  EXPECT_EQ(stats.decode_steps, 0);
}

TEST_F(ModelSchedulerTest, TheGenerationLimitAnswersQueueFullAndAStoppedSchedulerRefuses) {
  SchedulerOptions options;
  options.max_generations = 0;
  ModelScheduler scheduler("stories", model_.get(), tokenizer_.get(), options);
  auto generation = std::make_shared<GenerateWork>();
  generation->request.prompt = {1, 2, 3};
  const absl::Status full = scheduler.Submit(generation);
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_TRUE(IsQueueFull(full)) << full;
  EXPECT_FALSE(IsQueueFull(absl::ResourceExhaustedError("does not fit the memory budget")));

  scheduler.Stop();
  auto score = std::make_shared<ScoreWork>();
  score->requests = Requests(0, 1);
  const absl::Status stopped = scheduler.Submit(score);
  EXPECT_EQ(stopped.code(), absl::StatusCode::kUnavailable) << stopped;
  EXPECT_FALSE(IsQueueFull(stopped));
}

}  // namespace
}  // namespace hgeval::server
