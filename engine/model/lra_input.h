// Turns an LRA example's raw inputs (text, or image pixels) into what an LRA classifier
// takes: token ids from the checkpoint's vocabulary file, or pixel values with the
// channel count the model was trained on (RGB made gray by LRA's rule when the model
// takes one channel). Shared by the in-process evaluator and the server.
#ifndef HGEVAL_ENGINE_MODEL_LRA_INPUT_H_
#define HGEVAL_ENGINE_MODEL_LRA_INPUT_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/lra_classifier.h"
#include "engine/tokenizer/lra_vocabulary.h"

namespace hgeval {

// tf.image.rgb_to_grayscale on uint8 pixels as LRA applies it to CIFAR-10: weights
// (0.2989, 0.5870, 0.1140) on [0, 1] values, back to uint8 by convert_image_dtype
// (x * 255.5, truncated).
uint8_t LraGrayscale(uint8_t r, uint8_t g, uint8_t b);

// One document: `text` for a token model (`vocab` required), or `pixels` ([H, W,
// channels]) for a pixel model. InvalidArgument saying what does not fit the model.
absl::StatusOr<LraDocument> MakeLraDocument(const LraClassifierConfig& config,
                                            const LraVocabulary* vocab, std::string_view text,
                                            absl::Span<const uint8_t> pixels, int channels);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_MODEL_LRA_INPUT_H_
