#include "tests/server/server_fixture.h"

#include <csignal>

#include "tests/support/paths.h"

namespace hgeval::testing {

void ServerFixture::MakeDir(const std::string& tag) { dir_ = MakeTempDir(tag); }

void ServerFixture::StartServer(const std::vector<std::string>& args,
                                absl::Duration serving_timeout) {
  ASSERT_FALSE(dir_.empty()) << "MakeDir first";
  ASSERT_TRUE(server_.Start(dir_, args).ok());
  client_ = ConnectClient(server_.address());
  ASSERT_TRUE(client_->WaitServing(serving_timeout).ok());
}

int ServerFixture::RunHgevalRun(const std::vector<std::string>& flags, std::string* out) const {
  std::vector<std::string> argv = {std::string(HGEVAL_BINARY_DIR) + "/client/hgeval", "run",
                                   "--server=" + server_.address(), "--progress=false"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return RunCommand(argv, out);
}

void ServerFixture::TearDown() {
  if (server_.running()) server_.Stop(SIGTERM);
}

}  // namespace hgeval::testing
