#include "server/openai_http_server.h"

#include <httplib.h>

#include <exception>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/http_gateway.h"
#include "server/log.h"

namespace hgeval::server {
namespace {

constexpr char kJson[] = "application/json";

void SendError(const absl::Status& status, httplib::Response& response) {
  HttpError error = ToHttpError(status);
  response.status = error.http_status;
  response.set_content(std::move(error.body), kJson);
}

std::string Authorization(const httplib::Request& request) {
  return request.get_header_value("Authorization");
}

// Sends `body` as JSON, or its error.
void Reply(const absl::StatusOr<std::string>& body, httplib::Response& response) {
  if (!body.ok()) return SendError(body.status(), response);
  response.set_content(*body, kJson);
}

}  // namespace

OpenAiHttpServer::OpenAiHttpServer(const CompletionsGateway* completions,
                                   const RemoteTokenizerGateway* tokenizer, int64_t max_body_bytes)
    : completions_(completions), tokenizer_(tokenizer), http_(std::make_unique<httplib::Server>()) {
  http_->set_payload_max_length(static_cast<size_t>(max_body_bytes));
  // Set on the listening socket, which Linux copies to every accepted one: without it
  // headers and body leave in two segments and the second waits for the client's
  // delayed ACK, 40 ms per kept-alive call (issue 30).
  http_->set_tcp_nodelay(true);
  // Idle keep-alive connections are dropped after this long; it also bounds how long a
  // shutdown waits for them.
  http_->set_keep_alive_timeout(2);
  http_->Get("/v1/models", [this](const httplib::Request& request, httplib::Response& response) {
    Reply(completions_->ListModels(Authorization(request)), response);
  });
  http_->Get(
      "/tokenizer_info", [this](const httplib::Request& request, httplib::Response& response) {
        Reply(tokenizer_->Info(request.get_param_value("model"), Authorization(request)), response);
      });
  http_->Post("/tokenize", [this](const httplib::Request& request, httplib::Response& response) {
    Reply(tokenizer_->Tokenize(request.body, Authorization(request)), response);
  });
  http_->Post("/detokenize", [this](const httplib::Request& request, httplib::Response& response) {
    Reply(tokenizer_->Detokenize(request.body, Authorization(request)), response);
  });
  http_->Post(
      "/v1/completions", [this](const httplib::Request& request, httplib::Response& response) {
        const absl::Time start = absl::Now();
        absl::StatusOr<CompletionRequest> parsed = ParseCompletionRequest(request.body);
        absl::StatusOr<std::string> body =
            parsed.ok() ? completions_->Complete(*parsed, Authorization(request)) : parsed.status();
        if (!body.ok()) {
          LogInfo("http_completions_failed",
                  {{"peer", request.remote_addr},
                   {"code", absl::StatusCodeToString(body.status().code())}});
          return SendError(body.status(), response);
        }
        response.set_content(*std::move(body), kJson);
        LogInfo("http_completions",
                {{"peer", request.remote_addr},
                 {"model", parsed->model},
                 {"ms", absl::StrCat(absl::ToInt64Milliseconds(absl::Now() - start))}});
      });
  // Unknown routes, wrong methods and bodies over the limit: OpenAI-style bodies too
  // (handlers' own errors already carry one).
  http_->set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& request,
                                                                   httplib::Response& response) {
    if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string what = absl::StrCat(request.method, " ", request.path);
    absl::Status status;
    switch (response.status) {
      case 404:
        status = absl::NotFoundError(absl::StrCat(
            "no route ", what,
            "; this server offers GET /v1/models, POST /v1/completions, GET /tokenizer_info, "
            "POST /tokenize and POST /detokenize"));
        break;
      case 413:
        // cpp-httplib caps form-encoded bodies (curl -d's default type) at 8 KiB.
        status = absl::InvalidArgumentError(
            request.get_header_value("Content-Type") == "application/x-www-form-urlencoded"
                ? "the body is sent as a form (Content-Type: "
                  "application/x-www-form-urlencoded), which is capped at 8 KiB; send it "
                  "with Content-Type: application/json"
                : "the body is larger than this server accepts (--max_message_bytes)");
        break;
      default:
        status = absl::InvalidArgumentError(absl::StrCat("HTTP ", response.status, " for ", what));
    }
    const int http_status = response.status;
    SendError(status, response);
    response.status = http_status;
    return httplib::Server::HandlerResponse::Handled;
  }));
  // Nothing should throw; if something does, the request fails and the server stays up.
  http_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        SendError(absl::InternalError("internal error while handling the request"), response);
      });
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
  if (port == 0) {
    port = http_->bind_to_any_port(host);
  } else if (!http_->bind_to_port(host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen, " (HTTP)"));
  }
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  return port;
}

void OpenAiHttpServer::Stop() {
  if (!thread_.joinable()) return;
  http_->stop();
  thread_.join();
}

}  // namespace hgeval::server
