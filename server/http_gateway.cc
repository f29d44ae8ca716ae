#include "server/http_gateway.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "nlohmann/json.hpp"

namespace hgeval::server {
namespace {

constexpr char kParamPayload[] = "hgeval/openai-param";

}  // namespace

absl::Status FieldError(const std::string& param, const std::string& message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kParamPayload, absl::Cord(param));
  return status;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

std::optional<std::string> ErrorParam(const absl::Status& status) {
  absl::optional<absl::Cord> param = status.GetPayload(kParamPayload);
  if (!param.has_value()) return std::nullopt;
  return std::string(*param);
}

HttpError ToHttpError(const absl::Status& status) {
  int http = 500;
  std::string type = "server_error";
  std::string code = absl::AsciiStrToLower(absl::StatusCodeToString(status.code()));
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      http = 400;
      type = "invalid_request_error";
      break;
    case absl::StatusCode::kNotFound:
      http = 404;
      type = "invalid_request_error";
      if (absl::StartsWith(status.message(), "unknown model")) code = "model_not_found";
      break;
    case absl::StatusCode::kResourceExhausted:
      if (absl::StrContains(status.message(), "retry later")) {
        http = 429;
        type = "rate_limit_error";
      } else {
        http = 400;
        type = "invalid_request_error";
        if (absl::StrContains(status.message(), "tokens per sequence")) {
          code = "context_length_exceeded";
        }
      }
      break;
    case absl::StatusCode::kUnauthenticated:
      http = 401;
      type = "authentication_error";
      code = "invalid_api_key";
      break;
    case absl::StatusCode::kPermissionDenied:
      http = 403;
      type = "permission_error";
      break;
    case absl::StatusCode::kCancelled:
      http = 499;
      type = "invalid_request_error";
      break;
    case absl::StatusCode::kDeadlineExceeded:
      http = 504;
      break;
    case absl::StatusCode::kUnavailable:
      http = 503;
      break;
    default:
      break;
  }
  nlohmann::ordered_json error = {{"message", std::string(status.message())}, {"type", type}};
  const std::optional<std::string> param = ErrorParam(status);
  error["param"] =
      param.has_value() ? nlohmann::ordered_json(*param) : nlohmann::ordered_json(nullptr);
  error["code"] = code;
  return HttpError{http, nlohmann::ordered_json{{"error", error}}.dump(
                             -1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)};
}

std::unique_ptr<grpc::ClientContext> NewCallContext(const std::string& authorization) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!authorization.empty()) context->AddMetadata("authorization", authorization);
  return context;
}

absl::Status CheckAuthorizationHeader(const std::string& authorization) {
  for (unsigned char c : authorization) {
    if (c < 0x20 || c > 0x7e) return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

bool AppendTokenIds(const nlohmann::ordered_json& array, std::vector<int32_t>* ids) {
  for (const nlohmann::ordered_json& id : array) {
    if (!id.is_number_integer()) return false;
    // nlohmann keeps non-negative integers unsigned.
    const bool fits =
        id.is_number_unsigned()
            ? id.get<uint64_t>() <= std::numeric_limits<int32_t>::max()
            : id.get<int64_t>() >= 0 && id.get<int64_t>() <= std::numeric_limits<int32_t>::max();
    ids->push_back(fits ? static_cast<int32_t>(id.get<int64_t>()) : -1);
  }
  return true;
}

}  // namespace hgeval::server
