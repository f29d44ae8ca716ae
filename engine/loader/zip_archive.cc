#include "engine/loader/zip_archive.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace hgeval {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr size_t kEndRecordBytes = 22;
constexpr size_t kLocatorBytes = 20;
constexpr size_t kZip64EndRecordBytes = 56;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;

template <typename T>
T Read(const uint8_t* p) {
  T value = 0;
  for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(p[i]) << (8 * i);
  return value;
}

// Reads the archive's records with bounds checks; every error names the file.
class ZipReader {
 public:
  ZipReader(std::string_view file, absl::Span<const uint8_t> contents)
      : file_(file), data_(contents) {}

  absl::StatusOr<std::map<std::string, ZipEntry, std::less<>>> Entries() {
    if (data_.size() < kEndRecordBytes) return Truncated("shorter than a ZIP end record");
    // The end record sits in the last 22 + 65535 bytes (it may be followed by a comment).
    const size_t lowest =
        data_.size() > kEndRecordBytes + 0xFFFF ? data_.size() - kEndRecordBytes - 0xFFFF : 0;
    size_t end = data_.size() - kEndRecordBytes;
    while (Read<uint32_t>(&data_[end]) != kEndOfCentralDirectory) {
      if (end == lowest) return Invalid("no ZIP end-of-central-directory record");
      --end;
    }
    uint64_t count = Read<uint16_t>(&data_[end + 10]);
    uint64_t directory_size = Read<uint32_t>(&data_[end + 12]);
    uint64_t directory_offset = Read<uint32_t>(&data_[end + 16]);
    if (end >= kLocatorBytes && Read<uint32_t>(&data_[end - kLocatorBytes]) == kZip64Locator) {
      const uint64_t record = Read<uint64_t>(&data_[end - kLocatorBytes + 8]);
      if (record > data_.size() || data_.size() - record < kZip64EndRecordBytes) {
        return Truncated("the ZIP64 end record lies past the end of the file");
      }
      if (Read<uint32_t>(&data_[record]) != kZip64EndOfCentralDirectory) {
        return Invalid("the ZIP64 locator does not point at a ZIP64 end record");
      }
      count = Read<uint64_t>(&data_[record + 32]);
      directory_size = Read<uint64_t>(&data_[record + 40]);
      directory_offset = Read<uint64_t>(&data_[record + 48]);
    }
    if (directory_offset > data_.size() || directory_size > data_.size() - directory_offset) {
      return Truncated("the central directory lies past the end of the file");
    }
    std::map<std::string, ZipEntry, std::less<>> entries;
    size_t at = directory_offset;
    const size_t directory_end = directory_offset + directory_size;
    for (uint64_t i = 0; i < count; ++i) {
      if (directory_end - at < kCentralHeaderBytes ||
          Read<uint32_t>(&data_[at]) != kCentralHeader) {
        return Invalid(absl::StrCat("central directory entry ", i, " of ", count, " is malformed"));
      }
      const uint16_t method = Read<uint16_t>(&data_[at + 10]);
      uint64_t compressed = Read<uint32_t>(&data_[at + 20]);
      uint64_t uncompressed = Read<uint32_t>(&data_[at + 24]);
      const size_t name_length = Read<uint16_t>(&data_[at + 28]);
      const size_t extra_length = Read<uint16_t>(&data_[at + 30]);
      const size_t comment_length = Read<uint16_t>(&data_[at + 32]);
      uint64_t local = Read<uint32_t>(&data_[at + 42]);
      const size_t variable = name_length + extra_length + comment_length;
      if (directory_end - at - kCentralHeaderBytes < variable) {
        return Invalid(absl::StrCat("central directory entry ", i, " overruns the directory"));
      }
      std::string name(reinterpret_cast<const char*>(&data_[at + kCentralHeaderBytes]),
                       name_length);
      // ZIP64: the 64-bit values of the fields saturated at 0xFFFFFFFF, in this order.
      const uint8_t* extra = &data_[at + kCentralHeaderBytes + name_length];
      for (size_t e = 0; e + 4 <= extra_length;) {
        const uint16_t id = Read<uint16_t>(extra + e);
        const size_t size = Read<uint16_t>(extra + e + 2);
        if (e + 4 + size > extra_length) break;
        if (id == kZip64ExtraId) {
          size_t f = e + 4;
          for (uint64_t* field : {&uncompressed, &compressed, &local}) {
            if (*field != 0xFFFFFFFFu) continue;
            if (f + 8 > e + 4 + size) {
              return Invalid(absl::StrCat("'", name, "': short ZIP64 field"));
            }
            *field = Read<uint64_t>(extra + f);
            f += 8;
          }
        }
        e += 4 + size;
      }
      at += kCentralHeaderBytes + variable;

      ZipEntry entry;
      entry.method = method;
      if (method == 0) {
        if (compressed != uncompressed) {
          return Invalid(absl::StrCat("'", name, "': stored entry with ", compressed,
                                      " stored bytes for ", uncompressed));
        }
        if (local > data_.size() || data_.size() - local < kLocalHeaderBytes) {
          return Truncated(absl::StrCat("'", name, "': local header past the end of the file"));
        }
        if (Read<uint32_t>(&data_[local]) != kLocalHeader) {
          return Invalid(absl::StrCat("'", name, "': no local header where the directory says"));
        }
        const uint64_t begin = local + kLocalHeaderBytes + Read<uint16_t>(&data_[local + 26]) +
                               Read<uint16_t>(&data_[local + 28]);
        if (begin > data_.size() || uncompressed > data_.size() - begin) {
          return Truncated(absl::StrCat("'", name, "': ", uncompressed,
                                        " bytes of data run past the end of the file"));
        }
        entry.data = data_.subspan(begin, uncompressed);
      }
      if (!entries.emplace(name, entry).second) {
        return Invalid(absl::StrCat("entry '", name, "' appears twice"));
      }
    }
    return entries;
  }

 private:
  absl::Status Invalid(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(file_, ": ", what));
  }
  absl::Status Truncated(const std::string& what) const {
    return absl::DataLossError(absl::StrCat(file_, ": truncated ZIP archive: ", what));
  }

  std::string file_;
  absl::Span<const uint8_t> data_;
};

}  // namespace

bool LooksLikeZip(absl::Span<const uint8_t> contents) {
  return contents.size() >= 4 && Read<uint32_t>(contents.data()) == kLocalHeader;
}

absl::StatusOr<std::map<std::string, ZipEntry, std::less<>>> ReadZipEntries(
    std::string_view file, absl::Span<const uint8_t> contents) {
  return ZipReader(file, contents).Entries();
}

}  // namespace hgeval
