// Test helper: a throwaway PostgreSQL server from Debian's postgresql package (initdb,
// pg_ctl), in a temporary directory on a free loopback port, trusting local connections.
// Started as an unprivileged user when the test runs as root (PostgreSQL refuses root).
#ifndef HGEVAL_TESTS_SERVER_POSTGRES_PROCESS_H_
#define HGEVAL_TESTS_SERVER_POSTGRES_PROCESS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hgeval::testing {

class PostgresProcess {
 public:
  // The directory holding initdb and pg_ctl ($HGEVAL_PG_BIN, PATH, then
  // /usr/lib/postgresql/<newest>/bin); empty when PostgreSQL is not installed.
  static std::string FindBinDir();
  // What a test prints when it skips for want of the binaries.
  static const char* kMissingMessage;

  PostgresProcess() = default;
  ~PostgresProcess();  // stops a server still running
  PostgresProcess(const PostgresProcess&) = delete;
  PostgresProcess& operator=(const PostgresProcess&) = delete;

  // initdb + pg_ctl start under `work_dir` (logs: work_dir/postgres.log, the server's
  // work_dir/postgres-server.log).
  absl::Status Start(const std::string& work_dir);
  // pg_ctl stop -m immediate; the cluster's files are removed.
  void Stop();
  // A database restart as clients see it: pg_ctl stop -m fast (sessions are ended, the
  // cluster's files kept), then Resume() starts it again on the same directory and port.
  absl::Status StopFast();
  absl::Status Resume();
  // A new empty database; its connection URI.
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  // postgresql://hgeval@127.0.0.1:<port>/<database>
  std::string Uri(const std::string& database = "postgres") const;
  int port() const { return port_; }

 private:
  std::string bin_dir_;
  std::string data_dir_;
  std::string work_dir_;
  std::string options_;
  int port_ = 0;
  bool running_ = false;
};

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_POSTGRES_PROCESS_H_
