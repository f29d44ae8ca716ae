// The one progress bar of the command-line tools (hgeval run / watch / niah, hgeval-eval,
// hgeval-niah): a line with a bar, percent, counts, what came from the store and an ETA.
// On a terminal it is redrawn in place; otherwise (a log file, CI) a line is written at
// most once every few seconds, and always the last one.
#ifndef HGEVAL_TASKS_HARNESS_PROGRESS_BAR_H_
#define HGEVAL_TASKS_HARNESS_PROGRESS_BAR_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace hgeval::tasks {

struct Progress {
  int64_t done = 0;
  int64_t total = 0;   // 0 until known
  int64_t cached = 0;  // of done, found in the result store (not computed now)
  std::string unit = "requests";
  std::string label;  // e.g. the task running
};

// Seconds left at the rate of computed (not cached) items over `elapsed_s`: 0 when done,
// nullopt while there is no rate yet. The one ETA rule (the bar's, the web UI's).
std::optional<double> EtaSeconds(const Progress& progress, double elapsed_s);

// "[#######.......]  42% 420/1000 requests (12 cached)  ETA 0:01:02  piqa", the ETA from
// EtaSeconds.
std::string FormatProgress(const Progress& progress, double elapsed_s, int width = 30);

class ProgressBar {
 public:
  // Writes to `out` (stderr by default); `enabled` false makes every call a no-op.
  explicit ProgressBar(bool enabled, std::FILE* out = stderr);
  ~ProgressBar();  // Finish()

  // Redraws the bar; elapsed time counts from the first call.
  void Update(const Progress& progress);
  // Ends the bar's line (once; later calls do nothing).
  void Finish();

 private:
  bool enabled_;
  std::FILE* out_;
  bool terminal_;
  bool started_ = false;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_line_;
};

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_HARNESS_PROGRESS_BAR_H_
