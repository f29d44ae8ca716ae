#include "tests/server/tcp_drop_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace hgeval::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

bool SendAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

TcpDropProxy::~TcpDropProxy() {
  stopping_ = true;
  if (listen_fd_ >= 0) shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  std::vector<std::thread> relays;
  {
    absl::MutexLock lock(&mu_);
    relays.swap(relays_);
  }
  for (std::thread& t : relays) t.join();
}

absl::Status TcpDropProxy::Start(int upstream_port) {
  upstream_port_ = upstream_port;
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t size = sizeof(addr);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 16) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
    return absl::InternalError(absl::StrCat("proxy: ", std::strerror(errno)));
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
  return absl::OkStatus();
}

void TcpDropProxy::DropAfterNext(const std::string& text) {
  absl::MutexLock lock(&mu_);
  drop_text_ = text;
}

void TcpDropProxy::Accept() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) continue;
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(upstream_port_);
    if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(client);
      if (server >= 0) close(server);
      continue;
    }
    absl::MutexLock lock(&mu_);
    relays_.emplace_back([this, client, server] { Relay(client, server); });
  }
}

void TcpDropProxy::Relay(int client, int server) {
  char buffer[65536];
  while (!stopping_) {
    pollfd p[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    if (poll(p, 2, 100) <= 0) continue;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0 || !SendAll(server, buffer, static_cast<size_t>(n))) break;
      bool drop = false;
      {
        absl::MutexLock lock(&mu_);
        if (!drop_text_.empty() &&
            std::string_view(buffer, static_cast<size_t>(n)).find(drop_text_) !=
                std::string_view::npos) {
          drop_text_.clear();
          drop = true;
        }
      }
      if (drop) {
        // Let the server act on it, then cut before its reply is relayed.
        absl::SleepFor(absl::Milliseconds(300));
        ++drops_;
        break;
      }
    }
    if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = recv(server, buffer, sizeof(buffer), 0);
      if (n <= 0 || !SendAll(client, buffer, static_cast<size_t>(n))) break;
    }
  }
  close(client);
  close(server);
}

}  // namespace hgeval::testing
