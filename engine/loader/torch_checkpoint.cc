#include "engine/loader/torch_checkpoint.h"

#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/loader/mapped_file.h"
#include "engine/loader/torch_pickle.h"
#include "engine/loader/zip_archive.h"
#include "engine/util/status_macros.h"

namespace hgeval {
namespace {

// The archive's folder: the entries are "<folder>/data.pkl", "<folder>/data/<key>", ...
absl::StatusOr<std::string> ArchiveFolder(
    const std::string& path, const std::map<std::string, ZipEntry, std::less<>>& entries) {
  for (const auto& [name, entry] : entries) {
    const size_t slash = name.find('/');
    if (slash != std::string::npos && name.substr(slash) == "/data.pkl") {
      return name.substr(0, slash);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": a ZIP archive without <folder>/data.pkl, not a torch.save file"));
}

absl::StatusOr<absl::Span<const uint8_t>> StoredEntry(
    const std::string& path, const std::map<std::string, ZipEntry, std::less<>>& entries,
    const std::string& name) {
  auto it = entries.find(name);
  if (it == entries.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": archive entry '", name, "' is missing"));
  }
  if (it->second.method != 0) {
    return absl::UnimplementedError(absl::StrCat(path, ": archive entry '", name,
                                                 "' is compressed (method ", it->second.method,
                                                 "); torch.save stores entries uncompressed"));
  }
  return it->second.data;
}

}  // namespace

absl::StatusOr<std::map<std::string, TensorEntry>> OpenTorchCheckpointFile(
    const std::string& path, TensorTableCheckpoint& table) {
  HG_ASSIGN_OR_RETURN(std::shared_ptr<const MappedFile> mapped, MappedFile::Open(path));
  HG_ASSIGN_OR_RETURN(auto tensors, ReadTorchCheckpoint(path, mapped->bytes(), table));
  table.KeepAlive(mapped);
  return tensors;
}

absl::StatusOr<std::map<std::string, TensorEntry>> ReadTorchCheckpoint(
    const std::string& path, absl::Span<const uint8_t> contents, TensorTableCheckpoint& table) {
  if (!LooksLikeZip(contents)) {
    return absl::UnimplementedError(absl::StrCat(
        path,
        ": not a ZIP archive; only torch.save's format since PyTorch 1.6 is read (re-save "
        "the state dict with a recent PyTorch, or convert it to safetensors)"));
  }
  HG_ASSIGN_OR_RETURN(auto entries, ReadZipEntries(path, contents));
  HG_ASSIGN_OR_RETURN(const std::string folder, ArchiveFolder(path, entries));
  if (auto order = entries.find(folder + "/byteorder"); order != entries.end()) {
    const absl::Span<const uint8_t> text = order->second.data;
    if (std::string_view(reinterpret_cast<const char*>(text.data()), text.size()) != "little") {
      return absl::UnimplementedError(
          absl::StrCat(path, ": the archive's byte order is not little-endian"));
    }
  }
  HG_ASSIGN_OR_RETURN(absl::Span<const uint8_t> pickle,
                      StoredEntry(path, entries, folder + "/data.pkl"));
  HG_ASSIGN_OR_RETURN(std::vector<PickledTensor> tensors, ParseTorchStateDictPickle(path, pickle));

  std::map<std::string, TensorEntry> out;
  for (PickledTensor& t : tensors) {
    HG_ASSIGN_OR_RETURN(absl::Span<const uint8_t> storage,
                        StoredEntry(path, entries, absl::StrCat(folder, "/data/", t.storage_key)));
    const size_t element = DTypeSize(t.dtype);
    if (storage.size() / element < static_cast<uint64_t>(t.storage_numel)) {
      return absl::DataLossError(
          absl::StrCat(path, ": tensor '", t.name, "': storage ", t.storage_key, " holds ",
                       storage.size(), " bytes, fewer than its ", t.storage_numel, " elements"));
    }
    // The view's element count and extent, and whether it is the row-major layout of its
    // shape. Every product is checked: shapes and strides come from the file.
    uint64_t numel = 1, last = 0;
    bool contiguous = true, overflow = false;
    uint64_t expected_stride = 1;
    for (size_t d = t.shape.size(); d-- > 0;) {
      const uint64_t extent = static_cast<uint64_t>(t.shape[d]);
      const uint64_t stride = static_cast<uint64_t>(t.stride[d]);
      if (extent != 1 && stride != expected_stride) contiguous = false;
      overflow |= __builtin_mul_overflow(expected_stride, extent, &expected_stride);
      overflow |= __builtin_mul_overflow(numel, extent, &numel);
      uint64_t reach = 0;
      if (extent > 0) {
        overflow |= __builtin_mul_overflow(extent - 1, stride, &reach);
        overflow |= __builtin_add_overflow(last, reach, &last);
      }
    }
    TensorEntry entry;
    entry.info = TensorInfo{t.name, t.dtype, t.shape, path};
    if (numel == 0) {
      // No element is read, so its offset does not matter (torch writes any).
      entry.bytes = {};
    } else {
      uint64_t end = 0;
      if (overflow || __builtin_add_overflow(static_cast<uint64_t>(t.storage_offset), last, &end) ||
          end >= static_cast<uint64_t>(t.storage_numel)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ": tensor '", t.name, "' of shape ", ShapeString(t.shape), " at offset ",
            t.storage_offset, " reaches past its storage of ", t.storage_numel, " elements"));
      }
      if (contiguous) {
        entry.bytes = storage.subspan(t.storage_offset * element, numel * element);
      } else {
        // A strided view may repeat elements (stride 0: an expanded tensor); its gathered
        // copy must not outgrow its storage, or a tiny file could ask for terabytes.
        if (numel > static_cast<uint64_t>(t.storage_numel)) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ": tensor '", t.name, "' of shape ", ShapeString(t.shape),
                           " is a strided view with more elements than its storage of ",
                           t.storage_numel, " (an expanded tensor); save it with .contiguous()"));
        }
        // Gather the strided view into a buffer of its own, row-major.
        auto buffer = std::make_shared<std::vector<uint8_t>>(numel * element);
        std::vector<int64_t> index(t.shape.size(), 0);
        for (uint64_t i = 0; i < numel; ++i) {
          uint64_t source = t.storage_offset;
          for (size_t d = 0; d < index.size(); ++d) source += index[d] * t.stride[d];
          std::memcpy(buffer->data() + i * element, storage.data() + source * element, element);
          for (size_t d = index.size(); d-- > 0;) {
            if (++index[d] < t.shape[d]) break;
            index[d] = 0;
          }
        }
        entry.bytes = absl::MakeConstSpan(*buffer);
        table.KeepAlive(buffer);
      }
    }
    if (!out.emplace(t.name, std::move(entry)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor '", t.name, "' appears twice"));
    }
  }
  return out;
}

}  // namespace hgeval
