#include "tests/server/server_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "tests/support/paths.h"

namespace hgeval::testing {
namespace {

std::atomic<int> next_log{0};

int64_t ProcStatusKib(pid_t pid, const char* field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) {
      std::istringstream fields(line.substr(std::string(field).size()));
      int64_t kib = 0;
      fields >> kib;
      return kib;
    }
  }
  return -1;
}

}  // namespace

std::vector<std::string> GoldenServerArgs(const std::string& dir) {
  return {"--model=hgrn2=" + SourcePath("tests/golden/hgrn2"),
          "--tokenizer=" + SourcePath("data/models/stories260K/tok512.bin"),
          "--store=" + dir + "/store.sqlite", "--threads=1"};
}

std::string ServerBinary() { return std::string(HGEVAL_BINARY_DIR) + "/server/hgeval-server"; }
std::string ClientBinary() { return std::string(HGEVAL_BINARY_DIR) + "/client/hgeval"; }
std::string NiahBinary() {
  return std::string(HGEVAL_BINARY_DIR) + "/tasks/niah/tools/hgeval-niah";
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Stop(SIGKILL);
}

absl::Status ServerProcess::Start(const std::string& work_dir, const std::vector<std::string>& args,
                                  absl::Duration timeout, const std::string& listen) {
  const int n = next_log++;
  const std::string port_file = absl::StrCat(work_dir, "/port-", n);
  log_path_ = absl::StrCat(work_dir, "/server-", n, ".log");
  std::vector<std::string> argv = {ServerBinary(), "--listen=" + listen,
                                   "--port_file=" + port_file};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ < 0) return absl::InternalError("fork failed");
  if (pid_ == 0) {
    const int fd = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
    }
    std::vector<char*> cargs;
    for (std::string& a : argv) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    std::ifstream in(port_file);
    std::string port;
    if (in >> port && !port.empty()) {
      address_ = "127.0.0.1:" + port;
      return absl::OkStatus();
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      std::ifstream log(log_path_);
      std::string text((std::istreambuf_iterator<char>(log)), {});
      return absl::InternalError(absl::StrCat("hgeval-server exited at start: ", text));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  return absl::DeadlineExceededError("hgeval-server did not open its port");
}

int ServerProcess::Stop(int signal, absl::Duration timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  const absl::Time end = absl::Now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (absl::Now() > end) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1;
}

int64_t ServerProcess::RssKib() const { return ProcStatusKib(pid_, "VmRSS:"); }
int64_t ServerProcess::PeakRssKib() const { return ProcStatusKib(pid_, "VmHWM:"); }

double ServerProcess::CpuSeconds() const {
  std::ifstream in(absl::StrCat("/proc/", pid_, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

absl::StatusOr<hgeval::v1::Job> RunJobOnNewServer(const std::string& work_dir,
                                                  const std::vector<std::string>& args,
                                                  const hgeval::v1::SubmitJobRequest& request) {
  ServerProcess server;
  if (absl::Status s = server.Start(work_dir, args); !s.ok()) return s;
  client::ClientOptions options;
  options.servers = {server.address()};
  absl::StatusOr<std::unique_ptr<client::Client>> client = client::Client::Connect(options);
  if (!client.ok()) return client.status();
  if (absl::Status s = (*client)->WaitServing(absl::Seconds(30)); !s.ok()) return s;
  absl::StatusOr<std::string> id = (*client)->SubmitJob(request);
  if (!id.ok()) return id.status();
  absl::StatusOr<hgeval::v1::Job> job = (*client)->WatchJob(*id, nullptr);
  server.Stop(SIGTERM);
  return job;
}

absl::StatusOr<int> StartWithHttp(ServerProcess& server, const std::string& tag,
                                  std::vector<std::string> args) {
  const std::string dir = MakeTempDir(tag);
  args.push_back("--http_listen=127.0.0.1:0");
  args.push_back("--http_port_file=" + dir + "/http-port");
  args.push_back("--shutdown_grace_ms=0");
  if (absl::Status s = server.Start(dir, args); !s.ok()) return s;
  int port = 0;
  std::ifstream(dir + "/http-port") >> port;
  if (absl::Status s = ConnectClient(server.address())->WaitServing(absl::Seconds(60)); !s.ok()) {
    return s;
  }
  return port;
}

std::unique_ptr<client::Client> ConnectClient(const std::string& address) {
  client::ClientOptions options;
  options.servers = {address};
  return *client::Client::Connect(options);
}

int RunCommand(const std::vector<std::string>& argv, std::string* out) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], 1);
    close(pipefd[0]);
    close(pipefd[1]);
    std::vector<char*> cargs;
    for (const std::string& a : argv) cargs.push_back(const_cast<char*>(a.c_str()));
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    _exit(127);
  }
  close(pipefd[1]);
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buffer, sizeof(buffer))) > 0) {
    if (out != nullptr) out->append(buffer, static_cast<size_t>(n));
  }
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace hgeval::testing
