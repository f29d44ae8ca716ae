#include "tasks/lra/cifar10.h"

#include "absl/strings/str_cat.h"
#include "engine/model/lra_input.h"
#include "tasks/api/data_files.h"

namespace hgeval::tasks::lra {

absl::StatusOr<std::vector<Image>> ParseCifar10Batch(const std::string& bytes,
                                                     const std::string& name) {
  if (bytes.empty() || bytes.size() % kCifarRecordBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", bytes.size(), " bytes is not a whole number of CIFAR-10 records (",
                     kCifarRecordBytes, " bytes each: label, 1024 R, 1024 G, 1024 B)"));
  }
  constexpr int kPlane = kCifarSide * kCifarSide;
  std::vector<Image> images;
  for (size_t offset = 0; offset < bytes.size(); offset += kCifarRecordBytes) {
    const auto* record = reinterpret_cast<const uint8_t*>(bytes.data() + offset);
    Image image{kCifarSide, kCifarSide, 3, std::vector<uint8_t>(3 * kPlane), record[0]};
    if (image.label > 9) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": record ", images.size() + 1,
                                                     ": label ", image.label, " is above 9"));
    }
    for (int p = 0; p < kPlane; ++p) {
      for (int c = 0; c < 3; ++c) image.pixels[3 * p + c] = record[1 + c * kPlane + p];
    }
    images.push_back(std::move(image));
  }
  return images;
}

absl::StatusOr<std::vector<Image>> ReadCifar10Batch(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadDataFile(path);
  if (!bytes.ok()) return bytes.status();
  return ParseCifar10Batch(*bytes, path);
}

Image CifarToGrayscale(const Image& rgb) {
  Image gray{rgb.height, rgb.width, 1, {}, rgb.label};
  const int pixels = rgb.height * rgb.width;
  gray.pixels.resize(pixels);
  for (int p = 0; p < pixels; ++p) {
    gray.pixels[p] = LraGrayscale(rgb.pixels[3 * p], rgb.pixels[3 * p + 1], rgb.pixels[3 * p + 2]);
  }
  return gray;
}

}  // namespace hgeval::tasks::lra
