#include "server/http/http_gateway.h"

#include <cstdint>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace hgeval::server {
namespace {

constexpr char kParamPayload[] = "hgeval/openai-param";

using Json = nlohmann::ordered_json;

// nlohmann's DOM builder behind a counter: returning false from an event stops the
// parse there.
class BoundedSax {
 public:
  BoundedSax(Json* result, const JsonLimits& limits) : dom_(*result, false), limits_(limits) {}

  bool null() { return Count() && dom_.null(); }
  bool boolean(bool value) { return Count() && dom_.boolean(value); }
  bool number_integer(Json::number_integer_t value) {
    return Count() && dom_.number_integer(value);
  }
  bool number_unsigned(Json::number_unsigned_t value) {
    return Count() && dom_.number_unsigned(value);
  }
  bool number_float(Json::number_float_t value, const Json::string_t& text) {
    return Count() && dom_.number_float(value, text);
  }
  bool string(Json::string_t& value) { return Count() && dom_.string(value); }
  bool binary(Json::binary_t& value) { return Count() && dom_.binary(value); }
  bool start_object(std::size_t size) { return Open() && dom_.start_object(size); }
  bool key(Json::string_t& value) { return dom_.key(value); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t size) { return Open() && dom_.start_array(size); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& error) {
    return dom_.parse_error(position, token, error);
  }

  bool over_limit() const { return over_limit_; }

 private:
  bool Count() {
    if (++elements_ > limits_.max_elements) over_limit_ = true;
    return !over_limit_;
  }
  bool Open() {
    if (++depth_ > limits_.max_depth) over_limit_ = true;
    return Count();
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  const JsonLimits limits_;
  int64_t elements_ = 0;
  int depth_ = 0;
  bool over_limit_ = false;
};

}  // namespace

absl::StatusOr<nlohmann::ordered_json> ParseJsonBody(std::string_view text,
                                                     const JsonLimits& limits) {
  Json result;
  BoundedSax sax(&result, limits);
  bool parsed = false;
  try {
    parsed = Json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const nlohmann::json::exception&) {
    parsed = false;
  }
  if (sax.over_limit()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the body's JSON is larger than this server parses: more than ", limits.max_elements,
        " values (--http_max_json_elements) or deeper than ", limits.max_depth, " levels"));
  }
  if (!parsed || result.is_discarded()) {
    return absl::InvalidArgumentError("the body is not valid JSON (UTF-8)");
  }
  return result;
}

absl::Status FieldError(const std::string& param, const std::string& message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(kParamPayload, absl::Cord(param));
  return status;
}

absl::StatusOr<std::string> ScopedModel(const std::string& path_model, const std::string& named) {
  if (path_model.empty() || named.empty() || named == path_model) {
    return path_model.empty() ? named : path_model;
  }
  return FieldError("model", absl::StrCat("the path names model '", path_model,
                                          "' and the request model '", named, "'"));
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
