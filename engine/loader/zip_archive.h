// A read-only view of a ZIP archive held in memory (PKWARE APPNOTE 6.3), enough for the
// archives torch.save writes: entries found through the central directory (ZIP64 records
// included, for files over 4 GiB), names and stored sizes checked against the buffer.
// Only uncompressed ("stored") entries can be read; torch.save never compresses.
//
// Error codes: DataLoss when a record points past the end of the buffer (truncated file);
// InvalidArgument for anything else malformed.
#ifndef HGEVAL_ENGINE_LOADER_ZIP_ARCHIVE_H_
#define HGEVAL_ENGINE_LOADER_ZIP_ARCHIVE_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace hgeval {

struct ZipEntry {
  uint16_t method = 0;             // 0: stored (readable); anything else: compressed
  absl::Span<const uint8_t> data;  // the stored bytes (empty for compressed entries)
};

// Whether `contents` starts like a ZIP archive (a local file header signature).
bool LooksLikeZip(absl::Span<const uint8_t> contents);

// Every entry of the archive by name. `file` is used in messages only.
absl::StatusOr<std::map<std::string, ZipEntry, std::less<>>> ReadZipEntries(
    std::string_view file, absl::Span<const uint8_t> contents);

}  // namespace hgeval

#endif  // HGEVAL_ENGINE_LOADER_ZIP_ARCHIVE_H_
