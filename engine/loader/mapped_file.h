// A read-only memory map of a whole file.
#ifndef HGEVAL_ENGINE_LOADER_MAPPED_FILE_H_
#define HGEVAL_ENGINE_LOADER_MAPPED_FILE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hgeval {

class MappedFile {
 public:
  // NotFound when the file does not exist; an empty file maps to an empty span.
  static absl::StatusOr<std::shared_ptr<const MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const uint8_t* data_;
  size_t size_;
};

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_MAPPED_FILE_H_
