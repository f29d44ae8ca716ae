#include "server/http/http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace hgeval::server {
namespace {

constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kInflateChunk = 64 << 10;
constexpr size_t kMaxChunkLineBytes = 1024;
constexpr size_t kMaxTrailerBytes = 8 << 10;
// After an error that leaves a body unread, the client's remaining bytes are read and
// dropped this long before the socket closes, so that the error is not lost to a reset.
constexpr absl::Duration kLingerAfterError = absl::Seconds(1);
constexpr size_t kMaxLingerBytes = 4 << 20;

const char* Reason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 499:
      return "Client Closed Request";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

int RemainingMs(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
}

// The bytes of one connection, read with deadlines on a non-blocking socket.
class SocketIo {
 public:
  enum class Read { kData, kClosed, kTimeout };
  explicit SocketIo(int fd) : fd_(fd) {}

  std::string buffer;  // read, not consumed yet

  // Appends what arrives before `deadline` to `buffer`.
  Read Fill(absl::Time deadline) {
    char chunk[kReadChunk];
    while (true) {
      const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
      if (n > 0) {
        buffer.append(chunk, static_cast<size_t>(n));
        return Read::kData;
      }
      if (n == 0) return Read::kClosed;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return Read::kClosed;
      pollfd p{fd_, POLLIN, 0};
      const int ms = RemainingMs(deadline);
      if (ms == 0) return Read::kTimeout;
      const int ready = poll(&p, 1, ms);
      if (ready == 0) return Read::kTimeout;
      if (ready < 0 && errno != EINTR) return Read::kClosed;
    }
  }

  // Sends `head` then `body` (one writev when the socket takes them) before `deadline`.
  bool Write(absl::string_view head, absl::string_view body, absl::Time deadline) {
    size_t sent = 0;
    const size_t total = head.size() + body.size();
    while (sent < total) {
      iovec parts[2];
      int count = 0;
      if (sent < head.size()) {
        parts[count++] = {const_cast<char*>(head.data() + sent), head.size() - sent};
      }
      const size_t body_sent = sent > head.size() ? sent - head.size() : 0;
      if (body_sent < body.size()) {
        parts[count++] = {const_cast<char*>(body.data() + body_sent), body.size() - body_sent};
      }
      msghdr message{};
      message.msg_iov = parts;
      message.msg_iovlen = count;
      const ssize_t n = sendmsg(fd_, &message, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
      pollfd p{fd_, POLLOUT, 0};
      const int ms = RemainingMs(deadline);
      if (ms == 0 || poll(&p, 1, ms) <= 0) return false;
    }
    return true;
  }

  // Reads and drops what the client still sends, for a while.
  void Linger() {
    shutdown(fd_, SHUT_WR);
    const absl::Time deadline = absl::Now() + kLingerAfterError;
    size_t dropped = 0;
    while (dropped < kMaxLingerBytes) {
      buffer.clear();
      if (Fill(deadline) != Read::kData) break;
      dropped += buffer.size();
    }
    buffer.clear();
  }

 private:
  const int fd_;
};

// Collects a body's decoded bytes up to a cap, inflating gzip or zlib in bounded steps.
class BodySink {
 public:
  BodySink(std::string* out, int64_t cap, bool inflate) : out_(out), cap_(cap), inflate_(inflate) {
    if (inflate_) {
      std::memset(&stream_, 0, sizeof(stream_));
      // 15 + 32: a zlib or a gzip header, detected.
      inflating_ = inflateInit2(&stream_, 15 + 32) == Z_OK;
    }
  }
  ~BodySink() {
    if (inflating_) inflateEnd(&stream_);
  }
  BodySink(const BodySink&) = delete;
  BodySink& operator=(const BodySink&) = delete;

  // RESOURCE_EXHAUSTED once the decoded body passes the cap; INVALID_ARGUMENT for data
  // that does not inflate.
  absl::Status Add(absl::string_view data) {
    if (!inflate_) return Append(data.data(), data.size());
    if (!inflating_) return absl::InternalError("cannot start inflating the body");
    if (ended_) return absl::OkStatus();  // bytes after the compressed stream: ignored
    stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    stream_.avail_in = static_cast<uInt>(data.size());
    char chunk[kInflateChunk];
    do {
      stream_.next_out = reinterpret_cast<Bytef*>(chunk);
      stream_.avail_out = sizeof(chunk);
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        return absl::InvalidArgumentError("the body does not inflate as its Content-Encoding says");
      }
      if (absl::Status s = Append(chunk, sizeof(chunk) - stream_.avail_out); !s.ok()) return s;
      if (rc == Z_STREAM_END) {
        ended_ = true;
        break;
      }
      if (rc == Z_BUF_ERROR) break;  // needs more input
    } while (stream_.avail_in > 0 || stream_.avail_out == 0);
    return absl::OkStatus();
  }

  absl::Status Finish() const {
    if (inflate_ && !ended_) {
      return absl::InvalidArgumentError("the compressed body ends before its stream does");
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Append(const char* data, size_t size) {
    if (static_cast<int64_t>(out_->size() + size) > cap_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the body is larger than this server accepts (", cap_, " bytes after decoding)"));
    }
    out_->append(data, size);
    return absl::OkStatus();
  }

  std::string* out_;
  const int64_t cap_;
  const bool inflate_;
  bool inflating_ = false;
  bool ended_ = false;
  z_stream stream_;
};

// An error to answer (the connection closes after it).
struct Failure {
  int http_status;
  absl::Status status;
};

std::string PercentDecode(absl::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    int value = 0;
    if (in[i] == '%' && i + 2 < in.size() && absl::SimpleHexAtoi(in.substr(i + 1, 2), &value)) {
      out.push_back(static_cast<char>(value));
      i += 2;
    } else {
      out.push_back(in[i] == '+' ? ' ' : in[i]);
    }
  }
  return out;
}

// Parses the request line and headers (without the final blank line).
std::optional<Failure> ParseHead(absl::string_view head, HttpRequest* request, bool* http10) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  std::vector<absl::string_view> first = absl::StrSplit(lines[0], ' ');
  if (first.size() != 3 || first[0].empty() || first[1].empty() ||
      (first[2] != "HTTP/1.1" && first[2] != "HTTP/1.0")) {
    return Failure{400, absl::InvalidArgumentError("malformed request line")};
  }
  *http10 = first[2] == "HTTP/1.0";
  request->method = std::string(first[0]);
  request->target = std::string(first[1]);
  const size_t question = request->target.find('?');
  request->path = request->target.substr(0, question);
  if (question != std::string::npos) request->query = request->target.substr(question + 1);
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos || colon == 0 || lines[i][0] == ' ' ||
        lines[i][0] == '\t') {
      return Failure{400, absl::InvalidArgumentError("malformed header line")};
    }
    std::string name(lines[i].substr(0, colon));
    if (absl::StrContains(name, ' ') || absl::StrContains(name, '\t')) {
      return Failure{400, absl::InvalidArgumentError("malformed header name")};
    }
    absl::AsciiStrToLower(&name);
    request->headers.emplace_back(
        std::move(name), std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1))));
  }
  return std::nullopt;
}

// Failure::http_status when the client closed the connection: nothing to answer.
constexpr int kClientGone = 0;

// Reads a body framed as chunked or by `content_length` into `sink`, within
// `body_timeout`. The failure to answer, if any.
std::optional<Failure> ReadBody(SocketIo& io, bool chunked, int64_t content_length,
                                absl::Duration body_timeout, BodySink& sink) {
  const absl::Time deadline = absl::Now() + body_timeout;
  std::optional<Failure> failure;
  // Until the buffer holds `bytes`; false (and `failure` set) when it cannot.
  auto need = [&](size_t bytes) {
    while (io.buffer.size() < bytes) {
      const SocketIo::Read read = io.Fill(deadline);
      if (read == SocketIo::Read::kTimeout) {
        failure =
            Failure{408, absl::DeadlineExceededError(absl::StrCat(
                             "the request's body took longer than ",
                             absl::FormatDuration(body_timeout), " (--http_body_timeout_ms)"))};
        return false;
      }
      if (read == SocketIo::Read::kClosed) {
        failure = Failure{kClientGone, absl::CancelledError("the client went away")};
        return false;
      }
    }
    return true;
  };
  // Moves up to `bytes` of the buffer into the sink; how many it moved.
  auto take = [&](uint64_t bytes) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, io.buffer.size()));
    if (absl::Status s = sink.Add(absl::string_view(io.buffer).substr(0, n)); !s.ok()) {
      failure = Failure{absl::IsResourceExhausted(s) ? 413 : 400, s};
    }
    io.buffer.erase(0, n);
    return n;
  };
  if (!chunked) {
    for (int64_t left = content_length; left > 0 && !failure.has_value();) {
      if (io.buffer.empty() && !need(1)) break;
      left -= static_cast<int64_t>(take(static_cast<uint64_t>(left)));
    }
  } else {
    size_t trailer_bytes = 0;
    bool in_trailer = false;
    while (!failure.has_value()) {
      size_t line_end;
      while ((line_end = io.buffer.find("\r\n")) == std::string::npos) {
        if (io.buffer.size() > kMaxChunkLineBytes) {
          failure = Failure{400, absl::InvalidArgumentError("malformed chunk line")};
          break;
        }
        if (!need(io.buffer.size() + 1)) break;
      }
      if (failure.has_value()) break;
      const std::string line = io.buffer.substr(0, line_end);
      io.buffer.erase(0, line_end + 2);
      if (in_trailer) {
        trailer_bytes += line.size() + 2;
        if (trailer_bytes > kMaxTrailerBytes) {
          failure = Failure{431, absl::InvalidArgumentError("chunked trailer too large")};
        }
        if (line.empty()) break;
        continue;
      }
      const std::string size_text(absl::StripAsciiWhitespace(line.substr(0, line.find(';'))));
      uint64_t size = 0;
      if (size_text.empty() || size_text.size() > 15 || !absl::SimpleHexAtoi(size_text, &size)) {
        failure = Failure{400, absl::InvalidArgumentError("malformed chunk size")};
        break;
      }
      if (size == 0) {
        in_trailer = true;
        continue;
      }
      while (size > 0 && !failure.has_value()) {
        if (io.buffer.empty() && !need(1)) break;
        size -= take(size);
      }
      if (failure.has_value() || !need(2)) break;
      if (io.buffer.compare(0, 2, "\r\n") != 0) {
        failure = Failure{400, absl::InvalidArgumentError("malformed chunk end")};
        break;
      }
      io.buffer.erase(0, 2);
    }
  }
  if (!failure.has_value()) {
    if (absl::Status s = sink.Finish(); !s.ok()) failure = Failure{400, s};
  }
  return failure;
}

}  // namespace

std::string HttpRequest::Header(absl::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "";
}

std::string HttpRequest::QueryParam(absl::string_view name) const {
  for (absl::string_view pair : absl::StrSplit(query, '&')) {
    const size_t equals = pair.find('=');
    if (PercentDecode(pair.substr(0, equals)) == name) {
      return equals == absl::string_view::npos ? "" : PercentDecode(pair.substr(equals + 1));
    }
  }
  return "";
}

std::optional<std::pair<absl::string_view, absl::string_view>> SplitModelScope(
    absl::string_view path) {
  constexpr absl::string_view kPrefix = "/models/";
  if (!absl::StartsWith(path, kPrefix)) return std::nullopt;
  const absl::string_view rest = path.substr(kPrefix.size());
  const size_t slash = rest.find('/');
  if (slash == 0 || slash == absl::string_view::npos || slash + 1 == rest.size()) {
    return std::nullopt;
  }
  return std::make_pair(rest.substr(0, slash), rest.substr(slash));
}

std::string HttpRequest::ModelScope() const {
  const auto scoped = SplitModelScope(path);
  return scoped.has_value() ? PercentDecode(scoped->first) : "";
}

HttpListener::HttpListener(HttpLimits limits, std::vector<Route> routes, HeadCheck check_head,
                           ErrorResponse error_response)
    : limits_(limits),
      routes_(std::move(routes)),
      check_head_(std::move(check_head)),
      error_response_(std::move(error_response)) {}

HttpListener::~HttpListener() { Stop(); }

HttpListenerStats HttpListener::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

absl::StatusOr<int> HttpListener::Start(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (const int rc =
          getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", host, "': ", gai_strerror(rc)));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR only lets a restart bind past TIME_WAIT; without SO_REUSEPORT a port
    // another process listens on stays an error.
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
      error = std::strerror(errno);
      close(fd);
      continue;
    }
    listen_fd_ = fd;
    break;
  }
  freeaddrinfo(found);
  if (listen_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", host, ":", port, " (HTTP): ", error));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    close(listen_fd_);
    listen_fd_ = -1;
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return bound_port;
}

void HttpListener::Stop() {
  if (!accept_thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  const char wake = 1;
  (void)!write(wake_pipe_[1], &wake, 1);
  accept_thread_.join();
  close(listen_fd_);
  close(wake_pipe_[0]);
  close(wake_pipe_[1]);
  listen_fd_ = -1;
  std::unique_lock<std::mutex> lock(mutex_);
  // Idle connections close now, bodies still arriving are cut; a request being handled
  // gets its answer first (reading is shut, writing is not).
  for (Connection& c : connections_) {
    if (c.closing) continue;
    const bool idle = c.phase == Phase::kHead;
    if (idle) c.closing = true;
    shutdown(c.fd, idle ? SHUT_RDWR : SHUT_RD);
  }
  all_closed_.wait(lock, [this] { return connections_.empty(); });
}

bool HttpListener::MakeRoomLocked(const std::string& peer) {
  // The oldest connection waiting for a head, else the oldest still receiving a body: a
  // slow body holds no work of the server's either.
  auto close_oldest_idle = [this](const std::string* only_peer) {
    auto oldest = connections_.end();
    for (const Phase phase : {Phase::kHead, Phase::kBody}) {
      for (auto it = connections_.begin(); it != connections_.end(); ++it) {
        if (it->closing || it->phase != phase || (only_peer != nullptr && it->peer != *only_peer)) {
          continue;
        }
        if (oldest == connections_.end() || it->phase_since < oldest->phase_since) oldest = it;
      }
      if (oldest != connections_.end()) break;
    }
    if (oldest == connections_.end()) return false;
    oldest->closing = true;
    shutdown(oldest->fd, SHUT_RDWR);
    ++stats_.connections_evicted;
    return true;
  };
  int total = 0, from_peer = 0;
  for (const Connection& c : connections_) {
    if (c.closing) continue;
    ++total;
    from_peer += c.peer == peer;
  }
  if (from_peer >= limits_.max_connections_per_client && !close_oldest_idle(&peer)) return false;
  if (from_peer >= limits_.max_connections_per_client) --total;
  if (total >= limits_.max_connections && !close_oldest_idle(nullptr)) return false;
  return true;
}

void HttpListener::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length,
                           SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        absl::SleepFor(absl::Milliseconds(10));  // out of descriptors: let some close
      }
      continue;
    }
    // Headers and body leave in one write; without this Nagle holds a small second
    // segment for the client's delayed ACK (40 ms per kept-alive call).
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    char host[INET6_ADDRSTRLEN] = "";
    if (address.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&address)->sin6_addr, host,
                sizeof(host));
    } else {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&address)->sin_addr, host, sizeof(host));
    }
    ConnectionList::iterator connection;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!MakeRoomLocked(host)) {
        ++stats_.connections_refused;
        connection = connections_.end();
      } else {
        connection = connections_.insert(connections_.end(),
                                         Connection{fd, host, Phase::kHead, false, absl::Now()});
        ++stats_.connections_accepted;
      }
    }
    if (connection == connections_.end()) {
      const std::string body =
          error_response_(503,
                          absl::UnavailableError("too many connections (--http_max_connections, "
                                                 "--http_max_connections_per_client); retry later"))
              .body;
      SocketIo io(fd);
      io.Write(absl::StrCat("HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                            "application/json\r\nConnection: close\r\nContent-Length: ",
                            body.size(), "\r\n\r\n"),
               body, absl::Now() + absl::Milliseconds(100));
      close(fd);
      continue;
    }
    try {
      std::thread([this, connection] { Serve(connection); }).detach();
    } catch (const std::system_error&) {
      std::lock_guard<std::mutex> lock(mutex_);
      connections_.erase(connection);
      ++stats_.connections_refused;
      close(fd);
    }
  }
}

void HttpListener::SetPhase(ConnectionList::iterator connection, Phase phase) {
  std::lock_guard<std::mutex> lock(mutex_);
  connection->phase = phase;
  connection->phase_since = absl::Now();
}

const HttpListener::Route* HttpListener::FindRoute(const std::string& method,
                                                   const std::string& path) const {
  const auto scoped = SplitModelScope(path);
  const absl::string_view route_path = scoped.has_value() ? scoped->second : path;
  for (const Route& route : routes_) {
    if (route.path == route_path && route.method == method) return &route;
  }
  return nullptr;
}

void HttpListener::Serve(ConnectionList::iterator connection) {
  const int fd = connection->fd;
  SocketIo io(fd);
  auto send = [&](const HttpResponse& response, bool close_after) {
    std::string head = absl::StrCat(
        "HTTP/1.1 ", response.status, " ", Reason(response.status),
        "\r\nContent-Type: ", response.content_type, "\r\nContent-Length: ", response.body.size(),
        "\r\nConnection: ", close_after ? "close" : "keep-alive", "\r\n");
    for (const auto& [name, value] : response.headers) {
      absl::StrAppend(&head, name, ": ", value, "\r\n");
    }
    head += "\r\n";
    return io.Write(head, response.body, absl::Now() + limits_.write_timeout);
  };
  auto fail = [&](const Failure& failure, bool body_unread) {
    HttpResponse response = error_response_(failure.http_status, failure.status);
    response.status = failure.http_status;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failure.http_status == 408) ++stats_.timeouts;
      if (failure.http_status == 413) ++stats_.bodies_too_large;
    }
    send(response, /*close_after=*/true);
    if (body_unread) io.Linger();
  };

  while (true) {
    // 1. The head, within idle_timeout for its first byte and head_timeout in all.
    SetPhase(connection, Phase::kHead);
    while (!io.buffer.empty() && (io.buffer[0] == '\r' || io.buffer[0] == '\n')) {
      io.buffer.erase(0, 1);
    }
    if (io.buffer.empty() && io.Fill(absl::Now() + limits_.idle_timeout) != SocketIo::Read::kData) {
      break;
    }
    const absl::Time head_deadline = absl::Now() + limits_.head_timeout;
    size_t head_end = std::string::npos;
    bool closed = false;
    while ((head_end = io.buffer.find("\r\n\r\n")) == std::string::npos) {
      if (static_cast<int64_t>(io.buffer.size()) > limits_.max_head_bytes) break;
      const SocketIo::Read read = io.Fill(head_deadline);
      if (read == SocketIo::Read::kTimeout) {
        fail({408, absl::DeadlineExceededError(absl::StrCat(
                       "the request's headers took longer than ",
                       absl::FormatDuration(limits_.head_timeout), " (--http_head_timeout_ms)"))},
             false);
        closed = true;
        break;
      }
      if (read == SocketIo::Read::kClosed) {
        closed = true;
        break;
      }
    }
    if (closed) break;
    if (head_end == std::string::npos || static_cast<int64_t>(head_end) > limits_.max_head_bytes) {
      fail({431, absl::InvalidArgumentError(absl::StrCat("the request line and headers are over ",
                                                         limits_.max_head_bytes, " bytes"))},
           false);
      break;
    }
    SetPhase(connection, Phase::kBody);
    HttpRequest request;
    request.peer = connection->peer;
    bool http10 = false;
    const std::string head = io.buffer.substr(0, head_end);
    io.buffer.erase(0, head_end + 4);
    if (std::optional<Failure> f = ParseHead(head, &request, &http10); f.has_value()) {
      fail(*f, true);
      break;
    }
    const std::string connection_header = absl::AsciiStrToLower(request.Header("connection"));
    bool keep_alive = http10 ? connection_header == "keep-alive" : connection_header != "close";

    // 2. Framing of the body, checked before anything is read.
    const std::string transfer_encoding =
        absl::AsciiStrToLower(request.Header("transfer-encoding"));
    const std::string content_length_text = request.Header("content-length");
    int64_t content_length = 0;
    const bool chunked = !transfer_encoding.empty();
    if (chunked && transfer_encoding != "chunked") {
      fail({501, absl::UnimplementedError(absl::StrCat("Transfer-Encoding '", transfer_encoding,
                                                       "' is not supported; send chunked or "
                                                       "a Content-Length"))},
           true);
      break;
    }
    bool framing_ok = true;
    for (const auto& [name, value] : request.headers) {
      if (name != "content-length") continue;
      if (chunked || value != content_length_text) framing_ok = false;
    }
    if (!content_length_text.empty() &&
        (content_length_text.size() > 18 ||
         !std::all_of(content_length_text.begin(), content_length_text.end(),
                      [](char c) { return c >= '0' && c <= '9'; }) ||
         !absl::SimpleAtoi(content_length_text, &content_length))) {
      framing_ok = false;
    }
    if (!framing_ok) {
      fail({400, absl::InvalidArgumentError(
                     "conflicting or malformed Content-Length / Transfer-Encoding")},
           true);
      break;
    }
    const bool has_body = chunked || content_length > 0;

    const Route* route = FindRoute(request.method, request.path);
    if (route == nullptr) {
      fail({404, absl::NotFoundError(absl::StrCat("no route ", request.method, " ", request.path))},
           has_body);
      break;
    }
    // 3. The head check (authentication) before any body byte.
    int64_t max_body_bytes = limits_.max_body_bytes;
    if (check_head_) {
      if (std::optional<HttpResponse> refused = check_head_(request, &max_body_bytes);
          refused.has_value()) {
        if (has_body) keep_alive = false;
        send(*refused, !keep_alive);
        if (!keep_alive) {
          if (has_body) io.Linger();
          break;
        }
        continue;
      }
    }
    const std::string content_encoding =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(request.Header("content-encoding")));
    const bool inflate =
        content_encoding == "gzip" || content_encoding == "x-gzip" || content_encoding == "deflate";
    if (!inflate && !content_encoding.empty() && content_encoding != "identity") {
      fail({415, absl::InvalidArgumentError(
                     absl::StrCat("Content-Encoding '", content_encoding,
                                  "' is not supported; send identity, gzip or deflate"))},
           has_body);
      break;
    }
    if (content_length > max_body_bytes) {
      fail({413, absl::ResourceExhaustedError(absl::StrCat(
                     "the body is larger than this server accepts (", max_body_bytes, " bytes)"))},
           true);
      break;
    }
    if (has_body && absl::AsciiStrToLower(request.Header("expect")) == "100-continue" &&
        !io.Write("HTTP/1.1 100 Continue\r\n\r\n", "", absl::Now() + limits_.write_timeout)) {
      break;
    }

    // 4. The body, decoded under the cap, within body_timeout.
    BodySink sink(&request.body, max_body_bytes, inflate);
    if (has_body) {
      std::optional<Failure> failure =
          ReadBody(io, chunked, content_length, limits_.body_timeout, sink);
      if (failure.has_value()) {
        if (failure->http_status != kClientGone) fail(*failure, true);
        break;
      }
    }

    // 5. The handler and its answer.
    SetPhase(connection, Phase::kHandling);
    HttpResponse response;
    try {
      response = route->handler(request);
    } catch (...) {
      response = error_response_(500, absl::InternalError("internal error while handling "
                                                          "the request"));
      response.status = 500;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) keep_alive = false;
    }
    if (!send(response, !keep_alive)) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.timeouts;
      break;
    }
    if (!keep_alive) break;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    connections_.erase(connection);
    if (connections_.empty()) all_closed_.notify_all();
  }
  close(fd);
}

}  // namespace hgeval::server
