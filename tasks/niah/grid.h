// NIAH sweep grids: context lengths (tokens) x needle depths (percent).
//   paper: lengths round(linspace(1000, 16000, 35)), depths round(linspace(0, 100, 35)),
//          Kamradt's defaults, which Shen et al. 2024 used (SL App. C);
//   quick: lengths round(linspace(1000, 4000, 6)), depths round(linspace(0, 100, 6)), for
//          the CPU;
//   or user lists.
#ifndef HGEVAL_TASKS_NIAH_GRID_H_
#define HGEVAL_TASKS_NIAH_GRID_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hgeval::niah {

struct NiahGrid {
  std::vector<int64_t> lengths;  // ascending, distinct
  std::vector<double> depths;    // ascending, distinct, in [0, 100]
};

// numpy's round(linspace(start, stop, count)): evenly spaced, endpoints included, rounded
// half to even.
std::vector<double> RoundedLinspace(double start, double stop, int count);

// "paper" or "quick".
absl::StatusOr<NiahGrid> NiahGridPreset(std::string_view name);

// Comma-separated lists, e.g. "1000,2000,4000" and "0,50,100". Sorted and deduplicated;
// InvalidArgument for a malformed entry, a length < 1 or a depth outside [0, 100].
absl::StatusOr<std::vector<int64_t>> ParseLengthList(std::string_view text);
absl::StatusOr<std::vector<double>> ParseDepthList(std::string_view text);

// Sorts both lists ascending and drops duplicates (what the parsers do to user lists).
void NormalizeNiahGrid(NiahGrid& grid);

absl::Status ValidateNiahGrid(const NiahGrid& grid);

}  // namespace hgeval::niah

#endif  // HGEVAL_TASKS_NIAH_GRID_H_
