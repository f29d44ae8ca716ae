#include "tests/server/raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"

namespace hgeval::testing {

constexpr int64_t kMiB = 1 << 20;

int ConnectLoopback(int port, const char* from) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, from, &local.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

int ReadStatus(int fd, std::string* body) {
  // Byte by byte up to the end of the head, then exactly the body: a pipelined second
  // response must stay in the socket for the next call.
  std::string head;
  char c = 0;
  while (head.size() < 4 || head.compare(head.size() - 4, 4, "\r\n\r\n") != 0) {
    if (recv(fd, &c, 1, 0) != 1) return 0;
    head.push_back(c);
  }
  const size_t length_at = head.find("Content-Length: ");
  const size_t length =
      length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 16));
  std::string in;
  char chunk[65536];
  while (in.size() < length) {
    const ssize_t n = recv(fd, chunk, std::min(sizeof(chunk), length - in.size()), 0);
    if (n <= 0) return 0;
    in.append(chunk, static_cast<size_t>(n));
  }
  if (body != nullptr) *body = std::move(in);
  return std::stoi(head.substr(9, 3));
}

bool ClosedByServer(int fd, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  char chunk[4096];
  while (absl::Now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n <= 0) return true;
  }
  return false;
}

std::string PostHead(const std::string& path, const std::vector<std::string>& headers) {
  std::string head = absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  for (const std::string& h : headers) absl::StrAppend(&head, h, "\r\n");
  return head + "\r\n";
}

namespace {

// Gzip of `repeat` copies of `block` then `tail`, compressed as they are fed.
std::string GzipStream(std::string_view block, int64_t repeat, std::string_view tail) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
  std::string out;
  char buffer[1 << 16];
  auto feed = [&](std::string_view in, int flush) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z.avail_in = static_cast<uInt>(in.size());
    do {
      z.next_out = reinterpret_cast<Bytef*>(buffer);
      z.avail_out = sizeof(buffer);
      deflate(&z, flush);
      out.append(buffer, sizeof(buffer) - z.avail_out);
    } while (z.avail_out == 0);
  };
  for (int64_t i = 0; i < repeat; ++i) feed(block, Z_NO_FLUSH);
  feed(tail, Z_FINISH);
  deflateEnd(&z);
  return out;
}

}  // namespace

std::string Gzip(std::string_view data) { return GzipStream("", 0, data); }

std::string GzipBomb(int64_t bytes) {
  return GzipStream(std::string(kMiB, ' '), (bytes + kMiB - 1) / kMiB, "{}");
}

int SendChunked(int fd, int64_t chunks, size_t chunk, int64_t* sent) {
  const std::string frame = absl::StrCat(absl::Hex(chunk), "\r\n", std::string(chunk, ' '), "\r\n");
  *sent = 0;
  for (int64_t i = 0; i < chunks; ++i) {
    if (!SendAll(fd, frame)) break;
    *sent += static_cast<int64_t>(chunk);
  }
  if (*sent == chunks * static_cast<int64_t>(chunk)) SendAll(fd, "0\r\n\r\n");
  return ReadStatus(fd);
}

std::string AmplifyingCompletionBody(const std::string& model, int prompts, int tokens) {
  nlohmann::json ids = nlohmann::json::array();
  for (int p = 0; p < prompts; ++p) {
    std::vector<int> prompt;
    for (int t = 0; t < tokens; ++t) prompt.push_back(3 + (p * 7 + t * 13) % 500);
    ids.push_back(prompt);
  }
  return nlohmann::json{
      {"model", model}, {"prompt", ids}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 100}}
      .dump();
}

std::vector<int> SlowHeads(int port, int count, const char* from) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = ConnectLoopback(port, from);
    if (fd < 0) continue;
    if (SendAll(fd, "POST /v1/completions HTTP/1.1\r\n")) {
      fds.push_back(fd);
    } else {
      close(fd);
    }
  }
  return fds;
}

Trickle::Trickle(std::vector<int> fds) : fds_(std::move(fds)) {
  thread_ = std::thread([this] {
    for (int line = 0; !done_ && line < 40; ++line) {
      absl::SleepFor(absl::Milliseconds(500));
      for (int fd : fds_) send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  });
}

Trickle::~Trickle() {
  done_ = true;
  thread_.join();
  for (int fd : fds_) close(fd);
}

}  // namespace hgeval::testing
