#include "tasks/niah/grid.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hgeval::niah {

std::vector<double> RoundedLinspace(double start, double stop, int count) {
  std::vector<double> values;
  if (count <= 0) return values;
  if (count == 1) return {std::nearbyint(start)};
  const double step = (stop - start) / (count - 1);
  for (int i = 0; i < count; ++i) {
    // numpy: start + i * step, with the last value set to stop exactly.
    const double v = i == count - 1 ? stop : start + i * step;
    values.push_back(std::nearbyint(v));  // default rounding mode: half to even
  }
  return values;
}

namespace {

template <typename T>
void SortDistinct(std::vector<T>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

NiahGrid FromLinspace(double min_length, double max_length, int num_lengths, int num_depths) {
  NiahGrid grid;
  for (double v : RoundedLinspace(min_length, max_length, num_lengths)) {
    grid.lengths.push_back(static_cast<int64_t>(v));
  }
  grid.depths = RoundedLinspace(0, 100, num_depths);
  return grid;
}

// Comma-separated fields with surrounding whitespace removed; empty fields dropped.
std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> parts;
  for (absl::string_view part :
       absl::StrSplit(absl::string_view(text.data(), text.size()), ',', absl::SkipWhitespace())) {
    absl::string_view stripped = absl::StripAsciiWhitespace(part);
    parts.emplace_back(stripped.data(), stripped.size());
  }
  return parts;
}

}  // namespace

absl::StatusOr<NiahGrid> NiahGridPreset(std::string_view name) {
  if (name == "paper") return FromLinspace(1000, 16000, 35, 35);
  if (name == "quick") return FromLinspace(1000, 4000, 6, 6);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown NIAH grid preset '", std::string(name), "' (paper, quick)"));
}

void NormalizeNiahGrid(NiahGrid& grid) {
  SortDistinct(grid.lengths);
  SortDistinct(grid.depths);
}

absl::StatusOr<std::vector<int64_t>> ParseLengthList(std::string_view text) {
  std::vector<int64_t> lengths;
  for (const std::string& part : SplitList(text)) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1) {
      return absl::InvalidArgumentError(absl::StrCat("bad NIAH context length '", part, "'"));
    }
    lengths.push_back(v);
  }
  if (lengths.empty()) return absl::InvalidArgumentError("empty NIAH length list");
  SortDistinct(lengths);
  return lengths;
}

absl::StatusOr<std::vector<double>> ParseDepthList(std::string_view text) {
  std::vector<double> depths;
  for (const std::string& part : SplitList(text)) {
    double v = 0;
    if (!absl::SimpleAtod(part, &v) || !(v >= 0 && v <= 100)) {
      return absl::InvalidArgumentError(absl::StrCat("bad NIAH depth percent '", part, "'"));
    }
    depths.push_back(v);
  }
  if (depths.empty()) return absl::InvalidArgumentError("empty NIAH depth list");
  SortDistinct(depths);
  return depths;
}

absl::Status ValidateNiahGrid(const NiahGrid& grid) {
  if (grid.lengths.empty() || grid.depths.empty()) {
    return absl::InvalidArgumentError("NIAH grid needs at least one length and one depth");
  }
  for (size_t i = 0; i < grid.lengths.size(); ++i) {
    if (grid.lengths[i] < 1 || (i > 0 && grid.lengths[i] <= grid.lengths[i - 1])) {
      return absl::InvalidArgumentError("NIAH lengths must be positive and ascending");
    }
  }
  for (size_t i = 0; i < grid.depths.size(); ++i) {
    if (!(grid.depths[i] >= 0 && grid.depths[i] <= 100) ||
        (i > 0 && grid.depths[i] <= grid.depths[i - 1])) {
      return absl::InvalidArgumentError("NIAH depths must be ascending within [0, 100]");
    }
  }
  return absl::OkStatus();
}

}  // namespace hgeval::niah
