// Raw HTTP/1.1 over loopback sockets, for what a well-behaved client library will not
// send: compression bombs, endless chunked bodies, heads that trickle in. Shared by
// tests/server/http_robustness_e2e_test.cc and bench/http_attack_bench.cc.
#ifndef HGEVAL_TESTS_SERVER_RAW_HTTP_H_
#define HGEVAL_TESTS_SERVER_RAW_HTTP_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace hgeval::testing {

// A connection to 127.0.0.1:`port` from `from` (another 127/8 address is another client
// to the server), with 10 s send and receive timeouts; -1 when it fails.
int ConnectLoopback(int port, const char* from = "127.0.0.1");
bool SendAll(int fd, std::string_view data);
// The status of the response read from `fd` (0: closed, reset or timed out before one
// came), its body in *body.
int ReadStatus(int fd, std::string* body = nullptr);
// True once the server has closed `fd` (a response may come first), within `timeout`.
bool ClosedByServer(int fd, absl::Duration timeout);

// A POST head with `headers` ("Name: value") and the blank line.
std::string PostHead(const std::string& path, const std::vector<std::string>& headers);
// `data` gzip-compressed.
std::string Gzip(std::string_view data);
// `bytes` of JSON whitespace then `{}`, gzip-compressed (about 1,000:1).
std::string GzipBomb(int64_t bytes);
// Sends up to `chunks` chunks of `chunk` bytes as a chunked body (head already sent)
// until the server stops reading, then reads the status. *sent: body bytes sent.
int SendChunked(int fd, int64_t chunks, size_t chunk, int64_t* sent);
// A /v1/completions body whose answer is large: `prompts` id prompts of `tokens` ids with
// echo, logprobs=100 and max_tokens=0 (384 x 256: ~1 MB, a ~244 MB answer uncapped).
std::string AmplifyingCompletionBody(const std::string& model, int prompts, int tokens);

// `count` connections that sent a request line and no more.
std::vector<int> SlowHeads(int port, int count, const char* from);

// Sends one header line every 500 ms on each connection from a thread of its own, for
// at most 20 s; closes them when destroyed.
class Trickle {
 public:
  explicit Trickle(std::vector<int> fds);
  ~Trickle();
  Trickle(const Trickle&) = delete;
  Trickle& operator=(const Trickle&) = delete;

 private:
  std::vector<int> fds_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_RAW_HTTP_H_
