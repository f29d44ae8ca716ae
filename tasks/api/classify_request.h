// The input of a `classify` request (Long Range Arena): one document of an example, as
// text (encoded by the model side with its checkpoint's LRA vocabulary) or as an image.
#ifndef HGEVAL_TASKS_API_CLASSIFY_REQUEST_H_
#define HGEVAL_TASKS_API_CLASSIFY_REQUEST_H_

#include <cstdint>
#include <string>
#include <vector>

namespace hgeval::tasks {

struct ClassifyDocument {
  std::string text;             // text inputs (ListOps, IMDB, AAN)
  std::vector<uint8_t> pixels;  // image inputs: [height, width, channels], 0-255
  int32_t channels = 0;         // image inputs: 1 (gray) or 3 (RGB)
};

}  // namespace hgeval::tasks

#endif  // HGEVAL_TASKS_API_CLASSIFY_REQUEST_H_
