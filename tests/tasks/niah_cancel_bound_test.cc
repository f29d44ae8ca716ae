// Cancellation reaches inside a NIAH batch (issue 29 item 9): a server job's CancelJob and
// shutdown set the sweep's `cancelled`, which used to be polled only between batches, so a
// batch of many long cells ran on for tens of seconds. Here one batch of 36 cells of the
// golden LLaMA decodes 420 tokens each (seconds on the CPU); cancelled 300 ms in, the sweep
// must return CANCELLED within a second, both with and without prefix reuse.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "engine/model/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "tasks/niah/sweep.h"
#include "tests/support/paths.h"

namespace hgeval::niah {
namespace {

using hgeval::testing::SourcePath;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class NiahCancelBoundTest : public ::testing::TestWithParam<bool> {};

TEST_P(NiahCancelBoundTest, CancelInsideOneLongBatchReturnsWithinASecond) {
  LoadOptions load;
  load.threads = 1;
  auto model = LoadModel(SourcePath("tests/golden/llama"), load);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = LoadTokenizer(SourcePath("data/models/stories260K/tok512.bin"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();

  NiahOptions options;
  options.mode = NiahMode::kEasy;
  options.grid = NiahGrid{{400, 440, 480, 520, 560, 600}, {0, 20, 40, 60, 80, 100}};
  options.essays_dir = SourcePath("data/niah/PaulGrahamEssays");
  options.max_new_tokens = 420;
  options.stop_strings = {};  // random weights: every cell decodes all 420 tokens
  options.ignore_eos = true;
  options.prefix_reuse = GetParam();
  options.max_batch = 36;  // the whole grid is one batch: no check between batches helps

  // The uncancelled sweep: one batch, long enough that a bound of one second means
  // something.
  const Clock::time_point full_start = Clock::now();
  auto full = RunNiahSweep(**model, **tokenizer, options);
  const double full_seconds = SecondsSince(full_start);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ(full->stats.batches, 1);
  // Uncancelled, it would run past the cancel (at 0.3 s) by more than the 1 s bound.
  ASSERT_GT(full_seconds, 1.5) << "the batch is too quick to show the bound";

  std::atomic<bool> cancel{false};
  std::atomic<int64_t> polls_after_cancel{0};
  options.cancelled = [&] {
    if (!cancel.load()) return false;
    ++polls_after_cancel;
    return true;
  };
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancelled_at = Clock::now();
    cancel = true;
  });
  auto swept = RunNiahSweep(**model, **tokenizer, options);
  const Clock::time_point returned = Clock::now();
  canceller.join();
  ASSERT_FALSE(swept.ok());
  EXPECT_EQ(swept.status().code(), absl::StatusCode::kCancelled) << swept.status();
  const double after_cancel = std::chrono::duration<double>(returned - cancelled_at).count();
  std::printf("uncancelled batch %.2f s; returned %.3f s after the cancel\n", full_seconds,
              after_cancel);
  EXPECT_LT(after_cancel, 1.0) << "the uncancelled batch took " << full_seconds << " s";
  EXPECT_GE(polls_after_cancel.load(), 1);
}

INSTANTIATE_TEST_SUITE_P(PrefixReuse, NiahCancelBoundTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "PrefixReuse" : "Naive";
                         });

}  // namespace
}  // namespace hgeval::niah
