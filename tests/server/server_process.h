// Test helper: runs a real hgeval-server process on a free loopback port.
#ifndef HGEVAL_TESTS_SERVER_SERVER_PROCESS_H_
#define HGEVAL_TESTS_SERVER_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "hgeval/v1/jobs.pb.h"

namespace hgeval::testing {

// hgeval-server arguments serving the golden HGRN2 checkpoint as "hgrn2" with the tok512
// tokenizer, one thread, and a store in `dir`.
std::vector<std::string> GoldenServerArgs(const std::string& dir);

// Paths of the built binaries.
std::string ServerBinary();
std::string ClientBinary();
std::string NiahBinary();

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();  // SIGKILLs a server still running
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts hgeval-server with `args` plus --listen=127.0.0.1:0 and a port file in
  // `work_dir`; waits until the port is known (not for SERVING). Logs go to
  // work_dir/server-N.log.
  // `listen` replaces the free-port default (e.g. to restart on the same port).
  absl::Status Start(const std::string& work_dir, const std::vector<std::string>& args,
                     absl::Duration timeout = absl::Seconds(30),
                     const std::string& listen = "127.0.0.1:0");
  // host:port
  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Sends `signal` and reaps the process; returns its exit status (or -signal).
  int Stop(int signal, absl::Duration timeout = absl::Seconds(30));
  // Resident set size now and the peak, in KiB (from /proc).
  int64_t RssKib() const;
  int64_t PeakRssKib() const;
  // CPU time the process has used (user + system, from /proc), in seconds.
  double CpuSeconds() const;
  std::string log_path() const { return log_path_; }

 private:
  pid_t pid_ = -1;
  std::string address_;
  std::string log_path_;
};

// Starts a server with `args` in `work_dir`, runs `request` as a job to its end (any final
// state) and stops the server: a reference run.
absl::StatusOr<hgeval::v1::Job> RunJobOnNewServer(const std::string& work_dir,
                                                  const std::vector<std::string>& args,
                                                  const hgeval::v1::SubmitJobRequest& request);

// Starts `server` in a new temporary folder (`tag`) with `args` plus an HTTP door on a free
// loopback port and waits until it is serving; returns the HTTP port.
absl::StatusOr<int> StartWithHttp(ServerProcess& server, const std::string& tag,
                                  std::vector<std::string> args);

// A client of the one server at `address` (test servers run without TLS or tokens unless
// the test sets them up itself).
std::unique_ptr<client::Client> ConnectClient(const std::string& address);

// Runs a command, returns its exit status; stdout into *out.
int RunCommand(const std::vector<std::string>& argv, std::string* out);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_SERVER_PROCESS_H_
