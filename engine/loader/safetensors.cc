#include "engine/loader/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "engine/loader/tensor_table.h"
#include "nlohmann/json.hpp"

namespace hgeval {
namespace {

// nlohmann's parser recurses per nesting level; refuse deep nesting up front so a hostile
// header cannot exhaust the stack. A valid header needs depth 3.
constexpr int kMaxJsonDepth = 64;

bool NestingWithin(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// Messages quote header text; a hostile header may hold megabytes in one value.
std::string Clip(std::string text) {
  constexpr size_t kMaxQuoted = 200;
  if (text.size() > kMaxQuoted) {
    text.resize(kMaxQuoted);
    text += "...";
  }
  return text;
}

// A JSON value that must be a non-negative integer that fits int64.
bool AsNonNegativeInt(const nlohmann::json& value, uint64_t* out) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = v;
    return true;
  }
  if (value.is_number_integer()) {
    const int64_t v = value.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

}  // namespace

bool ParseDTypeName(std::string_view name, DType* dtype) {
  static constexpr DType kAll[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI64,
                                   DType::kI32, DType::kI8,   DType::kU8,  DType::kBool};
  for (DType candidate : kAll) {
    if (DTypeName(candidate) == name) {
      *dtype = candidate;
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::vector<SafetensorsTensor>> ParseSafetensors(
    std::string_view file, absl::Span<const uint8_t> contents) {
  const std::string where = absl::StrCat("safetensors file ", std::string(file));
  if (contents.size() < 8) {
    return absl::DataLossError(absl::StrCat(where, ": file is ", contents.size(),
                                            " bytes, shorter than the 8-byte header length "
                                            "(truncated or not a safetensors file)"));
  }
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | contents[i];
  if (header_size > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": header length ", header_size, " is absurdly large (limit ",
                     kMaxSafetensorsHeaderBytes, "); not a safetensors file?"));
  }
  if (header_size > contents.size() - 8) {
    return absl::DataLossError(absl::StrCat(where, ": header length ", header_size,
                                            " runs past the end of the file (", contents.size(),
                                            " bytes); truncated?"));
  }
  const std::string_view header_text(reinterpret_cast<const char*>(contents.data() + 8),
                                     header_size);
  const absl::Span<const uint8_t> data = contents.subspan(8 + header_size);

  if (!NestingWithin(header_text, kMaxJsonDepth)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": header JSON is nested deeper than ", kMaxJsonDepth));
  }
  nlohmann::json header;
  std::string duplicate_name;
  try {
    // The callback sees every key; top-level keys are tensor names, which must be unique
    // (nlohmann would silently keep the last one).
    std::set<std::string> seen_names;
    nlohmann::json::parser_callback_t on_event = [&](int depth, nlohmann::json::parse_event_t event,
                                                     nlohmann::json& parsed) {
      if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!seen_names.insert(key).second && duplicate_name.empty()) duplicate_name = key;
      }
      return true;
    };
    header = nlohmann::json::parse(header_text.begin(), header_text.end(), on_event);
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": header is not valid JSON: ", Clip(e.what())));
  }
  if (!header.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": header is not a JSON object (", header.type_name(), ")"));
  }
  if (!duplicate_name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": tensor '", Clip(duplicate_name), "' is listed twice in the header"));
  }

  std::vector<SafetensorsTensor> tensors;
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    if (name == "__metadata__") continue;
    const std::string what = absl::StrCat(where, ": tensor '", Clip(name), "'");
    const nlohmann::json& entry = it.value();
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": a tensor has an empty name"));
    }
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": entry is not an object"));
    }
    auto dtype_it = entry.find("dtype");
    auto shape_it = entry.find("shape");
    auto offsets_it = entry.find("data_offsets");
    if (dtype_it == entry.end() || shape_it == entry.end() || offsets_it == entry.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": entry needs \"dtype\", \"shape\" and \"data_offsets\""));
    }
    SafetensorsTensor tensor;
    tensor.info.name = name;
    tensor.info.file = std::string(file);
    if (!dtype_it->is_string() ||
        !ParseDTypeName(dtype_it->get_ref<const std::string&>(), &tensor.info.dtype)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": unsupported dtype ", Clip(dtype_it->dump()),
                       " (supported: F32, BF16, F16, F64, I64, I32, I8, U8, BOOL)"));
    }
    if (!shape_it->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": shape is not an array"));
    }
    // numel * dtype size; overflow only matters when no dimension is zero.
    uint64_t byte_size = DTypeSize(tensor.info.dtype);
    bool overflow = false;
    bool has_zero = false;
    for (const nlohmann::json& dim_json : *shape_it) {
      uint64_t dim = 0;
      if (!AsNonNegativeInt(dim_json, &dim)) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": shape ", Clip(shape_it->dump()),
                                                       " has a dimension that is not a "
                                                       "non-negative integer"));
      }
      tensor.info.shape.push_back(static_cast<int64_t>(dim));
      has_zero |= dim == 0;
      overflow |= __builtin_mul_overflow(byte_size, dim, &byte_size);
    }
    if (has_zero) {
      byte_size = 0;
      overflow = false;
    }
    const bool too_big = overflow;
    if (!offsets_it->is_array() || offsets_it->size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": data_offsets must be [begin, end]"));
    }
    uint64_t begin = 0, end = 0;
    if (!AsNonNegativeInt((*offsets_it)[0], &begin) || !AsNonNegativeInt((*offsets_it)[1], &end)) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": data_offsets ", Clip(offsets_it->dump()), " are not non-negative integers"));
    }
    if (end < begin) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": data_offsets [", begin, ", ", end, "] end before they begin"));
    }
    if (end > data.size()) {
      return absl::DataLossError(absl::StrCat(what, ": data_offsets [", begin, ", ", end,
                                              "] lie outside the data section (", data.size(),
                                              " bytes); truncated file?"));
    }
    if (too_big || end - begin != byte_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": holds ", end - begin, " bytes but shape ", ShapeString(tensor.info.shape),
          " of ", std::string(DTypeName(tensor.info.dtype)), " needs ",
          too_big ? std::string("more than 2^64") : absl::StrCat(byte_size)));
    }
    tensor.bytes = data.subspan(begin, end - begin);
    ranges.push_back({begin, end, tensors.size()});
    tensors.push_back(std::move(tensor));
  }
  // Overlaps: sort non-empty ranges by start; each must begin at or after the previous end.
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const Range* previous = nullptr;
  for (const Range& range : ranges) {
    if (range.begin == range.end) continue;
    if (previous != nullptr && range.begin < previous->end) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": tensor '", Clip(tensors[range.index].info.name), "' (bytes [", range.begin,
          ", ", range.end, ")) overlaps tensor '", Clip(tensors[previous->index].info.name),
          "' (bytes [", previous->begin, ", ", previous->end, "))"));
    }
    previous = &range;
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
              return a.info.name < b.info.name;
            });
  return tensors;
}

}  // namespace hgeval
