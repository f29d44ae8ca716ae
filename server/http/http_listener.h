// A small HTTP/1.1 server for hgeval-server's HTTP door (server/http/openai_http_server.h) that
// a hostile network cannot hold (issue 29). cpp-httplib 0.11.4, which it replaces, had no
// whole-request deadline, no connection cap, capped bodies only by their encoded size,
// read and inflated a body before any handler could refuse it, and left Nagle on.
// This one:
//   - sets TCP_NODELAY on every accepted socket and sends head and body in one write;
//   - binds without SO_REUSEPORT (a port in use is an error, not a shared port);
//   - gives each request a deadline for its head (request line and headers) and one for
//     its body, whatever the pace of the bytes (slowloris), and closes idle keep-alive
//     connections after `idle_timeout`;
//   - caps connections globally and per client address: over a cap the oldest idle
//     connection (waiting for, or receiving the head of, its next request) is closed,
//     else the oldest one still receiving a body; when every one is being handled the
//     new one gets 503;
//   - calls `check_head` (authentication) with the head only, before one byte of the body
//     is read or inflated; answers `Expect: 100-continue` only after it passed;
//   - caps the DECODED body (Content-Length, chunked, gzip or deflate) at the cap the
//     head check leaves: inflated in bounded steps, 413 as soon as it is over.
// One thread per connection (at most max_connections), so a slow client holds only its
// own thread.
#ifndef HGEVAL_SERVER_HTTP_HTTP_LISTENER_H_
#define HGEVAL_SERVER_HTTP_HTTP_LISTENER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace hgeval::server {

struct HttpLimits {
  int64_t max_body_bytes = 64 << 20;  // decoded; the head check may lower it per request
  int64_t max_head_bytes = 64 << 10;  // request line and headers
  absl::Duration head_timeout = absl::Seconds(10);
  absl::Duration body_timeout = absl::Seconds(60);
  // A kept-alive (or new) connection waiting for the first byte of a request.
  absl::Duration idle_timeout = absl::Seconds(5);
  absl::Duration write_timeout = absl::Seconds(30);
  int max_connections = 256;
  int max_connections_per_client = 64;
};

struct HttpRequest {
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;
  std::string query;                                         // after '?', undecoded
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;                                          // decoded
  std::string peer;                                          // client address

  // The first header `name` (lower case), or "".
  std::string Header(absl::string_view name) const;
  // A query parameter, percent-decoded, or "".
  std::string QueryParam(absl::string_view name) const;
  // The model a model-scoped path names (/models/<name>/<route>, the name
  // percent-decoded), or "". Such a path is served by <route>'s handler.
  std::string ModelScope() const;
};

// Splits /models/<name>/<route> into the name's segment (undecoded) and "/<route>";
// nullopt for any other path.
std::optional<std::pair<absl::string_view, absl::string_view>> SplitModelScope(
    absl::string_view path);

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // Further response headers (name, value), e.g. Set-Cookie for the web UI's login.
  std::vector<std::pair<std::string, std::string>> headers;
};

// Counters since Start (for tests and logs).
struct HttpListenerStats {
  int64_t connections_accepted = 0;
  int64_t connections_evicted = 0;  // idle (or receiving) ones closed to make room
  int64_t connections_refused = 0;  // 503: over a cap with every one being handled
  int64_t timeouts = 0;             // head, body or write deadline passed
  int64_t bodies_too_large = 0;
};

class HttpListener {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  struct Route {
    std::string method;
    std::string path;
    bool reads_body = false;
    Handler handler;
  };
  // Sees the head (body empty) before any body byte is read. A response refuses the
  // request; otherwise it may lower *max_body_bytes for this request.
  using HeadCheck =
      std::function<std::optional<HttpResponse>(const HttpRequest& head, int64_t* max_body_bytes)>;
  // The response for an error the listener itself detects (404, 408, 413, ...).
  using ErrorResponse = std::function<HttpResponse(int http_status, const absl::Status& status)>;

  HttpListener(HttpLimits limits, std::vector<Route> routes, HeadCheck check_head,
               ErrorResponse error_response);
  ~HttpListener();  // Stop()s
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds host:port (port 0: a free one; IPv6 literals without brackets) exclusively and
  // serves on threads of its own. Returns the bound port.
  absl::StatusOr<int> Start(const std::string& host, int port);
  // Stops accepting, closes every connection and waits for their threads (a handler
  // running finishes first).
  void Stop();

  HttpListenerStats stats() const;

 private:
  // Where a connection is: the first two hold no work of the server's and may be closed
  // to make room (heads first).
  enum class Phase { kHead, kBody, kHandling };
  struct Connection {
    int fd = -1;
    std::string peer;
    Phase phase = Phase::kHead;  // kHead: waiting for, or receiving, a request's head
    bool closing = false;        // evicted or stopping: its socket is shut down
    absl::Time phase_since;
  };
  using ConnectionList = std::list<Connection>;

  void AcceptLoop();
  // Makes room for one more connection from `peer`; false when none could be closed.
  bool MakeRoomLocked(const std::string& peer);
  void Serve(ConnectionList::iterator connection);
  void SetPhase(ConnectionList::iterator connection, Phase phase);
  const Route* FindRoute(const std::string& method, const std::string& path) const;

  const HttpLimits limits_;
  const std::vector<Route> routes_;
  const HeadCheck check_head_;
  const ErrorResponse error_response_;

  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread accept_thread_;

  mutable std::mutex mutex_;
  std::condition_variable all_closed_;
  ConnectionList connections_;  // guarded by mutex_
  bool stopping_ = false;       // guarded by mutex_
  HttpListenerStats stats_;     // guarded by mutex_
};

}  // namespace hgeval::server

#endif  // HGEVAL_SERVER_HTTP_HTTP_LISTENER_H_
