// Test helper: a loopback TCP proxy in front of a server (PostgreSQL in the store tests)
// that can cut a connection at a chosen moment: after relaying a client message that
// contains a given text (e.g. a COMMIT), it waits for the server to act on it and then
// closes both sides before the server's reply reaches the client. That is the one drop a
// restart test cannot produce on purpose: a statement that ran, its answer lost.
#ifndef HGEVAL_TESTS_SERVER_TCP_DROP_PROXY_H_
#define HGEVAL_TESTS_SERVER_TCP_DROP_PROXY_H_

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace hgeval::testing {

class TcpDropProxy {
 public:
  TcpDropProxy() = default;
  ~TcpDropProxy();
  TcpDropProxy(const TcpDropProxy&) = delete;
  TcpDropProxy& operator=(const TcpDropProxy&) = delete;

  // Listens on 127.0.0.1 (port()) and relays every connection to 127.0.0.1:upstream_port.
  absl::Status Start(int upstream_port);
  int port() const { return port_; }
  // The next client message holding `text` is relayed, then the connection is cut before
  // any reply (once; drops() counts the cuts).
  void DropAfterNext(const std::string& text);
  int drops() const { return drops_.load(); }

 private:
  void Accept();
  void Relay(int client, int server);

  int listen_fd_ = -1;
  int port_ = 0;
  int upstream_port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> drops_{0};
  absl::Mutex mu_;
  std::string drop_text_ ABSL_GUARDED_BY(mu_);
  std::thread acceptor_;
  std::vector<std::thread> relays_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_TCP_DROP_PROXY_H_
