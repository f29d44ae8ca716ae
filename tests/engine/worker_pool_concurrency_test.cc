// The CPU worker pool lets independent models run at once: a parallel loop of one thread
// does not wait for another thread's loop to end (the pool used to run one loop at a
// time across every CPU model of a server), and models run side by side give bit for bit
// the results they give alone.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/cpu/ops.h"
#include "engine/model/load_model.h"
#include "engine/runtime/scoring.h"
#include "gtest/gtest.h"
#include "tests/support/paths.h"

namespace hgeval {
namespace {

// Set once; waited for with a generous limit so that a serialising pool fails the test
// instead of hanging it (nothing here measures time).
class Flag {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

constexpr auto kLimit = std::chrono::seconds(20);

TEST(WorkerPoolConcurrencyTest, LoopsOfTwoThreadsAreInsideTheirRegionsAtOnce) {
  // Each thread's loop waits, inside the loop, until the other thread's loop has begun:
  // both can only finish if both regions are open at the same time.
  Flag a_inside, b_inside;
  std::atomic<bool> a_saw_b{false}, b_saw_a{false};
  std::thread a([&] {
    cpu::ParallelFor(4, [&](int64_t) {
      a_inside.Set();
      if (b_inside.WaitFor(kLimit)) a_saw_b = true;
    });
  });
  std::thread b([&] {
    cpu::ParallelFor(4, [&](int64_t) {
      b_inside.Set();
      if (a_inside.WaitFor(kLimit)) b_saw_a = true;
    });
  });
  a.join();
  b.join();
  EXPECT_TRUE(a_saw_b);
  EXPECT_TRUE(b_saw_a);
}

ScoreRequest Request(int salt) {
  ScoreRequest request;
  for (int i = 0; i < 160; ++i) request.context.push_back((i * 31 + salt) % 500 + 3);
  request.continuation = {5, 6, 7, 8, 9};
  return request;
}

TEST(WorkerPoolConcurrencyTest, AModelRunsWhileAnotherThreadsLoopIsOpen) {
  absl::StatusOr<std::unique_ptr<Model>> model =
      LoadModel(testing::SourcePath("tests/golden/hgrn2"), LoadOptions());
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<std::vector<ScoreResult>> alone = Score(**model, {Request(7)});
  ASSERT_TRUE(alone.ok()) << alone.status();

  // Thread `holder` keeps a parallel loop open (its indices wait) until the model's whole
  // forward on this thread is done: the forward's own loops must not wait for it.
  Flag forward_done;
  std::atomic<bool> holder_released{false};
  std::thread holder([&] {
    cpu::ParallelFor(2, [&](int64_t) {
      if (forward_done.WaitFor(kLimit)) holder_released = true;
    });
  });
  absl::StatusOr<std::vector<ScoreResult>> beside = Score(**model, {Request(7)});
  forward_done.Set();
  holder.join();
  EXPECT_TRUE(holder_released) << "the forward waited for another thread's loop";
  ASSERT_TRUE(beside.ok()) << beside.status();
  EXPECT_EQ((*beside)[0].token_logprobs, (*alone)[0].token_logprobs);
}

TEST(WorkerPoolConcurrencyTest, TwoModelsSideBySideGiveTheirResultsAlone) {
  absl::StatusOr<std::unique_ptr<Model>> hgrn2 =
      LoadModel(testing::SourcePath("tests/golden/hgrn2"), LoadOptions());
  absl::StatusOr<std::unique_ptr<Model>> llama =
      LoadModel(testing::SourcePath("data/models/stories260K/stories260K.bin"), LoadOptions());
  ASSERT_TRUE(hgrn2.ok() && llama.ok());
  const std::vector<ScoreRequest> requests = {Request(1), Request(2), Request(3)};
  absl::StatusOr<std::vector<ScoreResult>> hgrn2_alone = Score(**hgrn2, requests);
  absl::StatusOr<std::vector<ScoreResult>> llama_alone = Score(**llama, requests);
  ASSERT_TRUE(hgrn2_alone.ok() && llama_alone.ok());
  std::vector<absl::StatusOr<std::vector<ScoreResult>>> hgrn2_runs, llama_runs;
  std::thread other([&] {
    for (int i = 0; i < 5; ++i) hgrn2_runs.push_back(Score(**hgrn2, requests));
  });
  for (int i = 0; i < 5; ++i) llama_runs.push_back(Score(**llama, requests));
  other.join();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(hgrn2_runs[i].ok() && llama_runs[i].ok());
    for (size_t r = 0; r < requests.size(); ++r) {
      EXPECT_EQ((*hgrn2_runs[i])[r].token_logprobs, (*hgrn2_alone)[r].token_logprobs);
      EXPECT_EQ((*llama_runs[i])[r].token_logprobs, (*llama_alone)[r].token_logprobs);
    }
  }
}

}  // namespace
}  // namespace hgeval
