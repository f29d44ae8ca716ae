// The HTTP listener of hgeval-server's OpenAI-compatible endpoint (--http_listen):
// GET /v1/models and POST /v1/completions (a CompletionsGateway) and vLLM's
// GET /tokenizer_info, POST /tokenize, POST /detokenize (a RemoteTokenizerGateway), served
// by an HttpListener (server/http/http_listener.h: deadlines, connection caps, decoded-body
// caps). Plain HTTP; every error is OpenAI-style JSON, and no request, however malformed,
// stops the server. The bearer token is checked on the headers, before any body is read.
#ifndef HGEVAL_SERVER_HTTP_OPENAI_HTTP_SERVER_H_
#define HGEVAL_SERVER_HTTP_OPENAI_HTTP_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/core/auth.h"
#include "server/http/http_listener.h"
#include "server/http/openai_completions.h"
#include "server/http/remote_tokenizer.h"
#include "server/http/web/web_ui.h"

namespace hgeval::server {

class OpenAiHttpServer {
 public:
  // The gateways, `auth` and `web_ui` (the /ui pages; nullptr: none) must outlive the
  // server.
  OpenAiHttpServer(const CompletionsGateway* completions, const RemoteTokenizerGateway* tokenizer,
                   const BearerAuth* auth, const HttpLimits& limits, web::WebUi* web_ui = nullptr);
  ~OpenAiHttpServer();  // Stop()s
  OpenAiHttpServer(const OpenAiHttpServer&) = delete;
  OpenAiHttpServer& operator=(const OpenAiHttpServer&) = delete;

  // Binds `listen` (HOST:PORT, [IPv6]:PORT; port 0 picks a free one) and serves on
  // threads of its own. Returns the bound port; a port in use is an error.
  absl::StatusOr<int> Start(const std::string& listen);
  // Stops accepting, closes idle connections and waits for requests in flight.
  void Stop();

 private:
  const CompletionsGateway* completions_;
  const RemoteTokenizerGateway* tokenizer_;
  const BearerAuth* auth_;
  web::WebUi* web_ui_;
  std::unique_ptr<HttpListener> listener_;
  bool started_ = false;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_HTTP_OPENAI_HTTP_SERVER_H_
