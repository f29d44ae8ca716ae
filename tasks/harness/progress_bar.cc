#include "tasks/harness/progress_bar.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_format.h"

namespace hgeval::tasks {
namespace {

// How often a bar that is not on a terminal writes a line.
constexpr std::chrono::seconds kLineInterval(5);

}  // namespace

std::optional<double> EtaSeconds(const Progress& progress, double elapsed_s) {
  const int64_t total = progress.total;
  const int64_t done = progress.done;
  const int64_t computed = done - progress.cached;
  if (total > 0 && done >= total) return 0.0;
  if (total > 0 && done > 0 && elapsed_s > 0.5 && computed > 0) {
    return static_cast<double>(total - done) / (static_cast<double>(computed) / elapsed_s);
  }
  return std::nullopt;
}

std::string FormatProgress(const Progress& progress, double elapsed_s, int width) {
  const int64_t total = progress.total;
  const int64_t done = progress.done;
  const double fraction = total > 0 ? std::min(1.0, static_cast<double>(done) / total) : 0.0;
  const int filled = static_cast<int>(fraction * width);
  const std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
  std::string eta = "--:--";
  if (const std::optional<double> left = EtaSeconds(progress, elapsed_s); left.has_value()) {
    const int64_t seconds = static_cast<int64_t>(*left);
    eta = absl::StrFormat("%d:%02d:%02d", seconds / 3600, (seconds / 60) % 60, seconds % 60);
  }
  return absl::StrFormat("[%s] %3d%% %d/%d %s (%d cached)  ETA %s  %s", bar,
                         static_cast<int>(fraction * 100), done, total, progress.unit,
                         progress.cached, eta, progress.label);
}

ProgressBar::ProgressBar(bool enabled, std::FILE* out)
    : enabled_(enabled), out_(out), terminal_(isatty(fileno(out)) != 0) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(const Progress& progress) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!started_) {
    started_ = true;
    start_ = now;
  }
  const bool last = progress.total > 0 && progress.done >= progress.total;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const std::string line = FormatProgress(progress, elapsed);
  if (terminal_) {
    std::fprintf(out_, "\r%s\033[K", line.c_str());
  } else {
    if (!last && drawn_ && now - last_line_ < kLineInterval) return;
    std::fprintf(out_, "%s\n", line.c_str());
    last_line_ = now;
  }
  drawn_ = true;
  std::fflush(out_);
}

void ProgressBar::Finish() {
  if (!enabled_ || !drawn_) return;
  if (terminal_) std::fprintf(out_, "\n");
  std::fflush(out_);
  drawn_ = false;
  enabled_ = false;
}

}  // namespace hgeval::tasks
