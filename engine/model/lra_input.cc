#include "engine/model/lra_input.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace hgeval {

uint8_t LraGrayscale(uint8_t r, uint8_t g, uint8_t b) {
  const float y = 0.2989f * (r / 255.0f) + 0.5870f * (g / 255.0f) + 0.1140f * (b / 255.0f);
  return static_cast<uint8_t>(std::clamp(std::trunc(y * 255.5f), 0.0f, 255.0f));
}

absl::StatusOr<LraDocument> MakeLraDocument(const LraClassifierConfig& config,
                                            const LraVocabulary* vocab, std::string_view text,
                                            absl::Span<const uint8_t> pixels, int channels) {
  LraDocument doc;
  if (config.embedding_encoder) {
    if (!pixels.empty()) {
      return absl::InvalidArgumentError("the model classifies text; the input is an image");
    }
    if (vocab == nullptr) {
      return absl::FailedPreconditionError(
          "the model classifies text but has no LRA vocabulary (lra_vocab.json beside it)");
    }
    absl::StatusOr<std::vector<int32_t>> ids = vocab->Encode(text);
    if (!ids.ok()) return ids.status();
    if (ids->empty()) return absl::InvalidArgumentError("the text encodes to no tokens");
    doc.tokens = *std::move(ids);
    return doc;
  }
  if (!text.empty() || pixels.empty()) {
    return absl::InvalidArgumentError("the model classifies images; the input has no pixels");
  }
  if (channels <= 0 || pixels.size() % channels != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(pixels.size(), " pixel bytes are not a multiple of ", channels, " channels"));
  }
  if (channels == config.input_channels) {
    doc.pixels.assign(pixels.begin(), pixels.end());
  } else if (channels == 3 && config.input_channels == 1) {
    for (size_t p = 0; p < pixels.size(); p += 3) {
      doc.pixels.push_back(LraGrayscale(pixels[p], pixels[p + 1], pixels[p + 2]));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("the model takes ", config.input_channels,
                                                   "-channel images; the input has ", channels));
  }
  return doc;
}

}  // namespace hgeval
