// The e2e tests' common set-up: a real hgeval-server process in the test's own temporary
// folder, a client connected to it and serving; the server is stopped (SIGTERM) after the
// test.
#ifndef HGEVAL_TESTS_SERVER_SERVER_FIXTURE_H_
#define HGEVAL_TESTS_SERVER_SERVER_FIXTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/server/server_process.h"

namespace hgeval::testing {

class ServerFixture : public ::testing::Test {
 protected:
  // A fresh temporary folder (named after `tag`) for the server's store, logs and the
  // test's inputs: dir_.
  void MakeDir(const std::string& tag);
  // Starts hgeval-server in dir_ with `args`, connects client_ and waits until it serves
  // (fatal test failures otherwise, so a SetUp calling it skips the test body).
  void StartServer(const std::vector<std::string>& args,
                   absl::Duration serving_timeout = absl::Seconds(60));
  void TearDown() override;
  // Runs `hgeval run --server=<this server> --progress=false <flags...>` and returns its
  // exit status (stdout into `out`), as server_process.h's RunCommand does.
  int RunHgevalRun(const std::vector<std::string>& flags, std::string* out) const;

  std::string dir_;
  ServerProcess server_;
  std::unique_ptr<client::Client> client_;
};

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SERVER_SERVER_FIXTURE_H_
