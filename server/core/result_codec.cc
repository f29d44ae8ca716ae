#include "server/core/result_codec.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "hgeval/v1/models.pb.h"
#include "nlohmann/json.hpp"
#include "server/core/wire_results.h"

namespace hgeval::server {
namespace {

using Json = nlohmann::json;

// The wire message without the per-reply `cached` flag.
template <typename Result>
std::string EncodeAsWire(Result result) {
  result.cached = false;
  return ToWire(result).SerializeAsString();
}

template <typename Wire, typename Result>
absl::Status DecodeAsWire(std::string_view bytes, const char* what, Result* out) {
  Wire wire;
  if (!wire.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(absl::StrCat("a stored ", what, " does not parse"));
  }
  *out = FromWire(wire);
  out->cached = false;
  return absl::OkStatus();
}

}  // namespace

std::string EncodeStored(const PairScore& score) { return EncodeAsWire(score); }
std::string EncodeStored(const Classification& classification) {
  return EncodeAsWire(classification);
}
std::string EncodeStored(const Generation& generation) { return EncodeAsWire(generation); }

absl::Status DecodeStored(std::string_view bytes, PairScore* score) {
  return DecodeAsWire<hgeval::v1::LoglikelihoodResult>(bytes, "score", score);
}
absl::Status DecodeStored(std::string_view bytes, Classification* classification) {
  return DecodeAsWire<hgeval::v1::ClassifyResult>(bytes, "classification", classification);
}
absl::Status DecodeStored(std::string_view bytes, Generation* generation) {
  return DecodeAsWire<hgeval::v1::GenerateResponse>(bytes, "generation", generation);
}

// The text is C-escaped: model output need not be valid UTF-8 and must come back byte for
// byte.
std::string EncodeStored(const niah::NiahCellResult& cell) {
  return Json{{"text", absl::CEscape(cell.generated)},
              {"tokens", cell.generated_tokens},
              {"finish_reason", static_cast<int>(cell.finish_reason)}}
      .dump();
}

absl::Status DecodeStored(std::string_view bytes, niah::NiahCellResult* cell) {
  try {
    const Json j = Json::parse(bytes);
    std::string error;
    if (!absl::CUnescape(j.at("text").get<std::string>(), &cell->generated, &error)) {
      return absl::DataLossError(absl::StrCat("stored NIAH cell: ", error));
    }
    cell->generated_tokens = j.at("tokens").get<std::vector<int32_t>>();
    const int reason = j.at("finish_reason").get<int>();
    if (reason < 0 || reason > static_cast<int>(FinishReason::kCancelled)) {
      return absl::DataLossError("stored NIAH cell: bad finish reason");
    }
    cell->finish_reason = static_cast<FinishReason>(reason);
  } catch (const Json::exception& e) {
    return absl::DataLossError(absl::StrCat("stored NIAH cell: ", e.what()));
  }
  cell->ran = true;
  return absl::OkStatus();
}

}  // namespace hgeval::server
