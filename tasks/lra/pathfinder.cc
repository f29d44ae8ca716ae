#include "tasks/lra/pathfinder.h"

#include <png.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tasks/api/data_files.h"

namespace hgeval::tasks::lra {

absl::StatusOr<std::vector<PathfinderEntry>> ParsePathfinderMetadata(const std::string& text,
                                                                     const std::string& name) {
  std::vector<PathfinderEntry> entries;
  const std::vector<std::string> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> fields =
        absl::StrSplit(lines[i], absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    const std::string where = absl::StrCat(name, ": line ", i + 1, ": ");
    if (fields.size() < 4) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "expected at least 4 fields (folder, file, x, label), got ", fields.size()));
    }
    int label = -1;
    if (!absl::SimpleAtoi(fields[3], &label) || (label != 0 && label != 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "label (field 4) must be 0 or 1, got '", fields[3], "'"));
    }
    if (fields[0].find("..") != std::string::npos || fields[1].find("..") != std::string::npos ||
        fields[0].starts_with("/")) {
      return absl::InvalidArgumentError(where + "the image path must stay inside the folder");
    }
    entries.push_back({absl::StrCat(fields[0], "/", fields[1]), label});
  }
  return entries;
}

absl::StatusOr<std::vector<PathfinderEntry>> ReadPathfinderIndex(
    const std::string& difficulty_dir) {
  namespace fs = std::filesystem;
  const fs::path metadata = fs::path(difficulty_dir) / "metadata";
  std::error_code error;
  std::vector<std::pair<int64_t, fs::path>> files;
  for (fs::directory_iterator it(metadata, error), end; !error && it != end; it.increment(error)) {
    const fs::path& path = it->path();
    int64_t stem = 0;
    if (path.extension() == ".npy" && absl::SimpleAtoi(path.stem().string(), &stem)) {
      files.emplace_back(stem, path);
    }
  }
  if (files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no Pathfinder metadata files (<n>.npy) in ", metadata.string()));
  }
  std::sort(files.begin(), files.end());
  std::vector<PathfinderEntry> entries;
  for (const auto& [stem, path] : files) {
    absl::StatusOr<std::string> text = ReadDataFile(path.string());
    if (!text.ok()) return text.status();
    absl::StatusOr<std::vector<PathfinderEntry>> part =
        ParsePathfinderMetadata(*text, path.string());
    if (!part.ok()) return part.status();
    entries.insert(entries.end(), part->begin(), part->end());
  }
  return entries;
}

absl::StatusOr<Image> ReadGrayPng(const std::string& path) {
  if (!std::filesystem::exists(path)) return absl::NotFoundError("no such PNG file: " + path);
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&png, path.c_str())) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a readable PNG (", png.message, ")"));
  }
  if ((png.format & (PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA | PNG_FORMAT_FLAG_LINEAR)) !=
      0) {
    png_image_free(&png);
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": expected an 8-bit grayscale PNG without alpha (Pathfinder's format)"));
  }
  Image image;
  image.height = static_cast<int>(png.height);
  image.width = static_cast<int>(png.width);
  image.channels = 1;
  png.format = PNG_FORMAT_GRAY;
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  if (!png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    return absl::InvalidArgumentError(absl::StrCat(path, ": damaged PNG (", message, ")"));
  }
  return image;
}

absl::Status WriteGrayPng(const std::string& path, const Image& image) {
  if (image.channels != 1 ||
      image.pixels.size() != static_cast<size_t>(image.height) * image.width) {
    return absl::InvalidArgumentError("WriteGrayPng: the image is not one-channel H x W");
  }
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = image.width;
  png.height = image.height;
  png.format = PNG_FORMAT_GRAY;
  if (!png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr)) {
    return absl::InternalError(absl::StrCat("writing ", path, ": ", png.message));
  }
  return absl::OkStatus();
}

}  // namespace hgeval::tasks::lra
