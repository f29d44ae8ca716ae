#include "server/http/openai_http_server.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/core/log.h"
#include "server/http/http_gateway.h"

namespace hgeval::server {
namespace {

// curl -d sends a form (application/x-www-form-urlencoded) unless told otherwise; such
// bodies are refused over this size with advice (the JSON routes never take forms).
constexpr int64_t kMaxFormBodyBytes = 8 << 10;

HttpResponse ErrorReply(const absl::Status& status) {
  HttpError error = ToHttpError(status);
  return HttpResponse{error.http_status, "application/json", std::move(error.body)};
}

// Sends `body` as JSON, or its error.
HttpResponse Reply(const absl::StatusOr<std::string>& body) {
  if (!body.ok()) return ErrorReply(body.status());
  return HttpResponse{200, "application/json", *body};
}

std::string Authorization(const HttpRequest& request) { return request.Header("authorization"); }

}  // namespace

OpenAiHttpServer::OpenAiHttpServer(const CompletionsGateway* completions,
                                   const RemoteTokenizerGateway* tokenizer, const BearerAuth* auth,
                                   const HttpLimits& limits, web::WebUi* web_ui)
    : completions_(completions), tokenizer_(tokenizer), auth_(auth), web_ui_(web_ui) {
  std::vector<HttpListener::Route> routes = {
      {"GET", "/v1/models", false,
       [this](const HttpRequest& request) {
         return Reply(completions_->ListModels(Authorization(request), request.ModelScope()));
       }},
      {"GET", "/tokenizer_info", false,
       [this](const HttpRequest& request) {
         absl::StatusOr<std::string> model =
             ScopedModel(request.ModelScope(), request.QueryParam("model"));
         if (!model.ok()) return ErrorReply(model.status());
         return Reply(tokenizer_->Info(*model, Authorization(request)));
       }},
      {"POST", "/tokenize", true,
       [this](const HttpRequest& request) {
         return Reply(
             tokenizer_->Tokenize(request.body, Authorization(request), request.ModelScope()));
       }},
      {"POST", "/detokenize", true,
       [this](const HttpRequest& request) {
         return Reply(
             tokenizer_->Detokenize(request.body, Authorization(request), request.ModelScope()));
       }},
      {"POST", "/v1/completions", true,
       [this](const HttpRequest& request) {
         const absl::Time start = absl::Now();
         absl::StatusOr<CompletionRequest> parsed = ParseCompletionRequest(
             request.body, completions_->json_limits(), request.ModelScope());
         absl::StatusOr<std::string> body =
             parsed.ok() ? completions_->Complete(*parsed, Authorization(request))
                         : parsed.status();
         if (!body.ok()) {
           LogInfo(
               "http_completions_failed",
               {{"peer", request.peer}, {"code", absl::StatusCodeToString(body.status().code())}});
           return ErrorReply(body.status());
         }
         LogInfo("http_completions",
                 {{"peer", request.peer},
                  {"model", parsed->model},
                  {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
         return HttpResponse{200, "application/json", *std::move(body)};
       }},
  };
  if (web_ui_ != nullptr) {
    for (HttpListener::Route& route : web_ui_->Routes()) routes.push_back(std::move(route));
  }
  // Authentication on the headers alone: an unauthenticated body is never read, let
  // alone inflated.
  auto check_head = [this](const HttpRequest& head,
                           int64_t* max_body_bytes) -> std::optional<HttpResponse> {
    // The web UI's pages take the token from a login cookie too.
    if (web_ui_ != nullptr && web::WebUi::IsUiPath(head.path)) {
      *max_body_bytes = std::min(*max_body_bytes, kMaxFormBodyBytes);
      return web_ui_->CheckHead(head);
    }
    const std::string authorization = head.Header("authorization");
    absl::Status status = CheckAuthorizationHeader(authorization);
    if (status.ok() && auth_ != nullptr) {
      const std::string_view value(authorization);
      status = FromGrpcStatus(auth_->CheckValue(authorization.empty() ? nullptr : &value));
    }
    if (!status.ok()) return ErrorReply(status);
    if (head.Header("content-type") == "application/x-www-form-urlencoded") {
      *max_body_bytes = std::min(*max_body_bytes, kMaxFormBodyBytes);
      int64_t length = 0;
      if (absl::SimpleAtoi(head.Header("content-length"), &length) && length > kMaxFormBodyBytes) {
        HttpResponse refused = ErrorReply(absl::InvalidArgumentError(
            "the body is sent as a form (Content-Type: application/x-www-form-urlencoded), "
            "which is capped at 8 KiB; send it with Content-Type: application/json"));
        refused.status = 413;
        return refused;
      }
    }
    return std::nullopt;
  };
  // Errors the listener finds itself: OpenAI-style bodies with its HTTP status.
  auto error_response = [](int http_status, const absl::Status& status) {
    std::string message(status.message());
    absl::StatusCode code = status.code();
    if (http_status == 404) {
      absl::StrAppend(&message,
                      "; this server offers GET /v1/models, POST /v1/completions, GET "
                      "/tokenizer_info, POST /tokenize and POST /detokenize, also under "
                      "/models/<name>/ for one model, and the web UI under /ui");
    } else if (http_status == 413) {
      absl::StrAppend(&message, "; the cap is --max_message_bytes");
      code = absl::StatusCode::kInvalidArgument;  // OpenAI's invalid_request_error
    }
    HttpResponse response = ErrorReply(absl::Status(code, message));
    response.status = http_status;
    return response;
  };
  listener_ = std::make_unique<HttpListener>(limits, std::move(routes), std::move(check_head),
                                             std::move(error_response));
}

OpenAiHttpServer::~OpenAiHttpServer() { Stop(); }

absl::StatusOr<int> OpenAiHttpServer::Start(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http_listen '", listen, "' is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  absl::StatusOr<int> bound = listener_->Start(host, port);
  started_ = bound.ok();
  return bound;
}

void OpenAiHttpServer::Stop() {
  if (!started_) return;
  started_ = false;
  listener_->Stop();
  // What the caps and deadlines did while the server ran.
  const HttpListenerStats stats = listener_->stats();
  LogInfo("http_stopped", {{"connections", absl::StrCat(stats.connections_accepted)},
                           {"evicted_idle", absl::StrCat(stats.connections_evicted)},
                           {"refused_503", absl::StrCat(stats.connections_refused)},
                           {"timeouts", absl::StrCat(stats.timeouts)},
                           {"bodies_too_large", absl::StrCat(stats.bodies_too_large)}});
}

}  // namespace hgeval::server
