// The one progress bar of the command-line tools: its line, its ETA from computed (not
// cached) items, and how it writes when stderr is not a terminal.
#include "tasks/harness/progress_bar.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hgeval::tasks {
namespace {

using ::testing::HasSubstr;

TEST(ProgressBarTest, LineShowsBarCountsCachedAndLabel) {
  const std::string line = FormatProgress(
      {.done = 50, .total = 200, .cached = 10, .unit = "requests", .label = "piqa"}, 0, 20);
  EXPECT_EQ(line, "[#####...............]  25% 50/200 requests (10 cached)  ETA --:--  piqa");
}

TEST(ProgressBarTest, EtaCountsOnlyComputedItems) {
  // 40 computed in 10 s: 4/s, 150 left: 37 s. Cached items would make it look faster.
  const std::string line =
      FormatProgress({.done = 50, .total = 200, .cached = 10, .unit = "cells"}, 10.0);
  EXPECT_THAT(line, HasSubstr("ETA 0:00:37"));
  EXPECT_THAT(line, HasSubstr("50/200 cells"));
  EXPECT_THAT(FormatProgress({.done = 200, .total = 200}, 3.0), HasSubstr("100% 200/200"));
  EXPECT_THAT(FormatProgress({.done = 200, .total = 200}, 3.0), HasSubstr("ETA 0:00:00"));
  EXPECT_THAT(FormatProgress({.done = 0, .total = 0}, 3.0), HasSubstr("  0% 0/0"));
}

TEST(ProgressBarTest, NotATerminalWritesWholeLinesAndAlwaysTheLast) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressBar bar(true, file);
    for (int done = 1; done <= 100; ++done) bar.Update({.done = done, .total = 100});
  }
  std::rewind(file);
  std::string text;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  // The first update and the last, nothing redrawn in place in between (a log file).
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_THAT(text, HasSubstr("100/100 requests"));
}

TEST(ProgressBarTest, DisabledWritesNothing) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressBar bar(false, file);
    bar.Update({.done = 1, .total = 2});
    bar.Finish();
  }
  EXPECT_EQ(std::ftell(file), 0);
  std::fclose(file);
}

}  // namespace
}  // namespace hgeval::tasks
