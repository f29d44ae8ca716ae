// An LRA image input: pixels in [0, 255], row-major, channels interleaved per pixel.
#ifndef HGEVAL_TASKS_LRA_IMAGE_H_
#define HGEVAL_TASKS_LRA_IMAGE_H_

#include <cstdint>
#include <vector>

namespace hgeval::tasks::lra {

struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;  // [height, width, channels]
  int label = 0;
};

}  // namespace hgeval::tasks::lra

#endif  // HGEVAL_TASKS_LRA_IMAGE_H_
