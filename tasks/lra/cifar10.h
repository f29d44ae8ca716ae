// CIFAR-10 in the official binary batch format (cifar-10-batches-bin: data_batch_N.bin,
// test_batch.bin): records of 1 label byte then 1,024 red, 1,024 green and 1,024 blue
// bytes of a row-major 32x32 image.
#ifndef HGEVAL_TASKS_LRA_CIFAR10_H_
#define HGEVAL_TASKS_LRA_CIFAR10_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tasks/lra/image.h"

namespace hgeval::tasks::lra {

inline constexpr int kCifarSide = 32;
inline constexpr int kCifarRecordBytes = 1 + 3 * kCifarSide * kCifarSide;

// Every record as a 32x32x3 image. InvalidArgument when the size is not a positive
// multiple of 3,073 bytes or a label is above 9.
absl::StatusOr<std::vector<Image>> ParseCifar10Batch(const std::string& bytes,
                                                     const std::string& name);
absl::StatusOr<std::vector<Image>> ReadCifar10Batch(const std::string& path);

// LRA's grayscale CIFAR-10 (engine/model/lra_input.h, LraGrayscale) of every pixel.
Image CifarToGrayscale(const Image& rgb);

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_CIFAR10_H_
