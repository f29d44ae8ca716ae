#include "tests/server/postgres_process.h"

#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace hgeval::testing {
namespace {

namespace fs = std::filesystem;

bool HasServerBinaries(const fs::path& dir) {
  return fs::exists(dir / "initdb") && fs::exists(dir / "pg_ctl") && fs::exists(dir / "postgres");
}

// A port nothing listens on now.
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

// The account PostgreSQL runs as when the test is root: Debian's postgres user, or nobody.
const passwd* UnprivilegedUser() {
  if (geteuid() != 0) return nullptr;
  const passwd* pw = getpwnam("postgres");
  return pw != nullptr ? pw : getpwnam("nobody");
}

// Runs argv (as `user` when given), output appended to `log`; its exit status.
int Run(const std::vector<std::string>& argv, const passwd* user, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    FILE* out = std::fopen(log.c_str(), "a");
    if (out != nullptr) {
      dup2(fileno(out), 1);
      dup2(fileno(out), 2);
    }
    if (user != nullptr && (setgid(user->pw_gid) != 0 || setuid(user->pw_uid) != 0)) _exit(126);
    std::vector<char*> cargs;
    for (const std::string& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

const char* PostgresProcess::kMissingMessage =
    "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install Debian's "
    "postgresql package (scripts/install_deps.sh does) or point $HGEVAL_PG_BIN at them to run "
    "the shared-store tests";

std::string PostgresProcess::FindBinDir() {
  if (const char* env = std::getenv("HGEVAL_PG_BIN"); env != nullptr && *env != '\0') {
    return HasServerBinaries(env) ? env : "";
  }
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      const fs::path d(std::string{dir});
      if (HasServerBinaries(d)) return d.string();
    }
  }
  std::vector<fs::path> versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    if (HasServerBinaries(entry.path() / "bin")) versions.push_back(entry.path() / "bin");
  }
  if (versions.empty()) return "";
  std::sort(versions.begin(), versions.end(), [](const fs::path& a, const fs::path& b) {
    return std::atoi(a.parent_path().filename().c_str()) <
           std::atoi(b.parent_path().filename().c_str());
  });
  return versions.back().string();
}

PostgresProcess::~PostgresProcess() { Stop(); }

absl::Status PostgresProcess::Start(const std::string& work_dir) {
  bin_dir_ = FindBinDir();
  if (bin_dir_.empty()) return absl::NotFoundError(kMissingMessage);
  const passwd* user = UnprivilegedUser();
  work_dir_ = work_dir;
  data_dir_ = work_dir + "/pgdata";
  const std::string log = work_dir + "/postgres.log";
  std::error_code ec;
  fs::create_directories(data_dir_, ec);
  if (user != nullptr) {
    // The server's account must reach and own its directory.
    fs::permissions(work_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
                    ec);
    if (chown(data_dir_.c_str(), user->pw_uid, user->pw_gid) != 0 ||
        chown(work_dir.c_str(), user->pw_uid, user->pw_gid) != 0) {
      return absl::InternalError(absl::StrCat("cannot hand ", data_dir_, " to ", user->pw_name));
    }
  }
  if (Run({bin_dir_ + "/initdb", "-D", data_dir_, "-U", "hgeval", "--auth=trust", "-E", "UTF8",
           "--no-locale", "--no-sync"},
          user, log) != 0) {
    return absl::InternalError(absl::StrCat("initdb failed (see ", log, ")"));
  }
  for (int attempt = 0; attempt < 5 && !running_; ++attempt) {
    port_ = FreeLoopbackPort();
    // No Unix socket (its default directory may not be writable); durability off: a test
    // database need not survive a power cut.
    options_ = absl::StrCat("-p ", port_,
                            " -c listen_addresses=127.0.0.1 -c unix_socket_directories=''"
                            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
    running_ = Run({bin_dir_ + "/pg_ctl", "-D", data_dir_, "-l", work_dir + "/postgres-server.log",
                    "-o", options_, "-w", "-t", "60", "start"},
                   user, log) == 0;
  }
  if (!running_) {
    return absl::InternalError(
        absl::StrCat("pg_ctl start failed (see ", log, " and ", data_dir_, "/server.log)"));
  }
  return absl::OkStatus();
}

void PostgresProcess::Stop() {
  if (!running_) return;
  Run({bin_dir_ + "/pg_ctl", "-D", data_dir_, "-m", "immediate", "-w", "stop"}, UnprivilegedUser(),
      "/dev/null");
  running_ = false;
  // The cluster (tens of MB) goes; the logs next to it stay.
  std::error_code ec;
  fs::remove_all(data_dir_, ec);
}

absl::Status PostgresProcess::StopFast() {
  if (!running_) return absl::FailedPreconditionError("PostgreSQL is not running");
  if (Run({bin_dir_ + "/pg_ctl", "-D", data_dir_, "-m", "fast", "-w", "-t", "60", "stop"},
          UnprivilegedUser(), work_dir_ + "/postgres.log") != 0) {
    return absl::InternalError("pg_ctl stop -m fast failed");
  }
  running_ = false;
  return absl::OkStatus();
}

absl::Status PostgresProcess::Resume() {
  if (running_) return absl::FailedPreconditionError("PostgreSQL is running");
  running_ = Run({bin_dir_ + "/pg_ctl", "-D", data_dir_, "-l", work_dir_ + "/postgres-server.log",
                  "-o", options_, "-w", "-t", "60", "start"},
                 UnprivilegedUser(), work_dir_ + "/postgres.log") == 0;
  if (!running_) return absl::InternalError("pg_ctl start (again) failed");
  return absl::OkStatus();
}

std::string PostgresProcess::Uri(const std::string& database) const {
  return absl::StrCat("postgresql://hgeval@127.0.0.1:", port_, "/", database);
}

absl::StatusOr<std::string> PostgresProcess::CreateDatabase(const std::string& name) {
  PGconn* conn = PQconnectdb(Uri().c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    PQfinish(conn);
    return absl::UnavailableError(message);
  }
  PGresult* r = PQexec(conn, absl::StrCat("CREATE DATABASE \"", name, "\"").c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  std::string message = PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(conn);
  if (!ok) return absl::InternalError(message);
  return Uri(name);
}

}  // namespace hgeval::testing
