#include "engine/util/memory_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace hgeval {

MemoryBudget::MemoryBudget(std::string what, size_t limit_bytes)
    : what_(std::move(what)), limit_(limit_bytes) {}

bool MemoryBudget::TryReserve(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (limit_ > 0 && (held_ > limit_ || bytes > limit_ - held_)) return false;
  held_ += bytes;
  peak_ = std::max(peak_, held_);
  return true;
}

absl::Status MemoryBudget::Reserve(size_t bytes, std::string_view purpose) {
  if (TryReserve(bytes)) return absl::OkStatus();
  std::vector<std::function<void()>> reclaim;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Reclaimer& r : reclaimers_) reclaim.push_back(r.reclaim);
  }
  for (const auto& fn : reclaim) fn();
  if (TryReserve(bytes)) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  return absl::ResourceExhaustedError(absl::StrCat(
      std::string(purpose), " needs ", FormatBytes(bytes), " of ", what_, " but ",
      FormatBytes(held_), " of the budget of ", FormatBytes(limit_),
      " are held (a larger --device_memory / --host_memory, or a smaller request, fits)"));
}

void MemoryBudget::Release(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  held_ -= std::min(held_, bytes);
}

void MemoryBudget::AddReclaimer(const void* owner, std::function<void()> reclaim,
                                std::function<size_t()> reclaimable) {
  std::lock_guard<std::mutex> lock(mu_);
  reclaimers_.push_back({owner, std::move(reclaim), std::move(reclaimable)});
}

void MemoryBudget::RemoveReclaimer(const void* owner) {
  std::lock_guard<std::mutex> lock(mu_);
  reclaimers_.erase(std::remove_if(reclaimers_.begin(), reclaimers_.end(),
                                   [owner](const Reclaimer& r) { return r.owner == owner; }),
                    reclaimers_.end());
}

void MemoryBudget::SetLimit(size_t limit_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = limit_bytes;
}

size_t MemoryBudget::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_;
}

size_t MemoryBudget::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

size_t MemoryBudget::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void MemoryBudget::ResetPeak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = held_;
}

size_t MemoryBudget::available() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (limit_ == 0) return std::numeric_limits<size_t>::max();
  return held_ >= limit_ ? 0 : limit_ - held_;
}

size_t MemoryBudget::obtainable() const {
  std::vector<std::function<size_t()>> counts;
  size_t free_now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (limit_ == 0) return std::numeric_limits<size_t>::max();
    free_now = held_ >= limit_ ? 0 : limit_ - held_;
    for (const Reclaimer& r : reclaimers_) counts.push_back(r.reclaimable);
  }
  for (const auto& count : counts) free_now += count();
  return free_now;
}

absl::StatusOr<size_t> ParseMemorySize(std::string_view text, size_t total) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(std::string(text)));
  if (s.empty() || s == "0" || s == "auto") return size_t{0};
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory size must be bytes with an optional unit (20GiB, 512MiB, 8GB, 1.5G), a "
        "fraction of the memory (0.8) or a percentage (80%); got \"",
        std::string(text), "\""));
  };
  if (s.back() == '%') {
    double pct = 0;
    if (!absl::SimpleAtod(s.substr(0, s.size() - 1), &pct) || !(pct > 0) || pct > 100) {
      return bad();
    }
    if (total == 0) return absl::FailedPreconditionError("the memory's size is unknown");
    return static_cast<size_t>(static_cast<double>(total) * pct / 100.0);
  }
  struct Unit {
    const char* suffix;
    double scale;
  };
  static constexpr Unit kUnits[] = {
      {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0},
      {"kb", 1e3},     {"mb", 1e6},        {"gb", 1e9},           {"tb", 1e12},
      {"k", 1024.0},   {"m", 1048576.0},   {"g", 1073741824.0},   {"t", 1099511627776.0},
      {"b", 1.0}};
  double scale = 0;
  for (const Unit& u : kUnits) {
    const std::string suffix = u.suffix;
    if (s.size() > suffix.size() &&
        s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
      scale = u.scale;
      s.resize(s.size() - suffix.size());
      break;
    }
  }
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(s), &value) || !(value > 0) ||
      !std::isfinite(value)) {
    return bad();
  }
  if (scale == 0) {
    // No unit: a fraction of the memory when below 1, else bytes.
    if (value < 1.0) {
      if (total == 0) return absl::FailedPreconditionError("the memory's size is unknown");
      return static_cast<size_t>(static_cast<double>(total) * value);
    }
    scale = 1.0;
  }
  const double bytes = value * scale;
  if (bytes >= 1.8e19) return bad();
  return static_cast<size_t>(bytes);
}

std::string FormatBytes(size_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1073741824.0) return absl::StrFormat("%.2f GiB", b / 1073741824.0);
  if (b >= 1048576.0) return absl::StrFormat("%.1f MiB", b / 1048576.0);
  if (b >= 1024.0) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrCat(bytes, " B");
}

MemoryBudget& HostMemoryBudget() {
  static MemoryBudget* budget = new MemoryBudget("host memory", 0);
  return *budget;
}

size_t HostAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0;
  while (in >> key >> value >> unit) {
    if (key == "MemAvailable:") return static_cast<size_t>(value) * 1024;
  }
  return 0;
}

}  // namespace hgeval
