// The HTTP listener of hgeval-server's OpenAI-compatible endpoint (--http_listen):
// cpp-httplib serving GET /v1/models and POST /v1/completions (a CompletionsGateway) and
// vLLM's GET /tokenizer_info, POST /tokenize, POST /detokenize (a RemoteTokenizerGateway).
// Plain HTTP; every error is OpenAI-style JSON, and no request, however malformed, stops
// the server.
#ifndef HGEVAL_SERVER_OPENAI_HTTP_SERVER_H_
#define HGEVAL_SERVER_OPENAI_HTTP_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/openai_completions.h"
#include "server/remote_tokenizer.h"

namespace httplib {
class Server;
}

namespace hgeval::server {

class OpenAiHttpServer {
 public:
  // The gateways must outlive the server. Bodies over `max_body_bytes` get 413.
  OpenAiHttpServer(const CompletionsGateway* completions, const RemoteTokenizerGateway* tokenizer,
                   int64_t max_body_bytes);
  ~OpenAiHttpServer();  // Stop()s
  OpenAiHttpServer(const OpenAiHttpServer&) = delete;
  OpenAiHttpServer& operator=(const OpenAiHttpServer&) = delete;

  // Binds `listen` (HOST:PORT, [IPv6]:PORT; port 0 picks a free one) and serves on a
  // thread of its own. Returns the bound port.
  absl::StatusOr<int> Start(const std::string& listen);
  // Stops accepting and waits for the listener thread.
  void Stop();

 private:
  const CompletionsGateway* completions_;
  const RemoteTokenizerGateway* tokenizer_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_OPENAI_HTTP_SERVER_H_
