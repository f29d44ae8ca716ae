// Pathfinder and Path-X in the LRA release layout: a difficulty folder (e.g.
// pathfinder32/curv_contour_length_14) holding metadata/<n>.npy files (text despite the
// extension; each line `imgs/<k> sample_<i>.png <x> <label> ...`) and 8-bit grayscale PNGs
// under imgs/<k>/.
#ifndef HGEVAL_TASKS_LRA_PATHFINDER_H_
#define HGEVAL_TASKS_LRA_PATHFINDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tasks/lra/image.h"

namespace hgeval::tasks::lra {

struct PathfinderEntry {
  std::string image;  // relative to the difficulty folder: "imgs/0/sample_0.png"
  int label = 0;
};

// The entries of one metadata file. InvalidArgument naming the line for fewer than 4
// fields or a label other than 0 or 1.
absl::StatusOr<std::vector<PathfinderEntry>> ParsePathfinderMetadata(const std::string& text,
                                                                     const std::string& name);
// Every metadata/<n>.npy file of `difficulty_dir`, in order of n (as OL/S4 sort them by
// their integer stem), concatenated. NotFound when there are none.
absl::StatusOr<std::vector<PathfinderEntry>> ReadPathfinderIndex(const std::string& difficulty_dir);

// An 8-bit grayscale PNG (libpng). InvalidArgument naming the file for one that is not a
// PNG, is truncated or damaged, or is not 8-bit single-channel; NotFound when missing.
absl::StatusOr<Image> ReadGrayPng(const std::string& path);
// Writes an 8-bit grayscale PNG (tests, tools).
absl::Status WriteGrayPng(const std::string& path, const Image& image);

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_PATHFINDER_H_
