// Runs a command line through the shell and keeps what it prints: the CLI tests' way of
// driving a built program (its stdout; stderr only where the command line redirects it).
#ifndef HGEVAL_TESTS_SUPPORT_SHELL_COMMAND_H_
#define HGEVAL_TESTS_SUPPORT_SHELL_COMMAND_H_

#include <string>

namespace hgeval::testing {

struct ShellResult {
  int exit_code = -1;  // the command's exit status; -1: not started or killed by a signal
  std::string out;     // its standard output
};

ShellResult RunShell(const std::string& command);
// The same, for call sites that keep one output buffer: returns the exit code, sets *out.
int RunShell(const std::string& command, std::string* out);

}  // namespace hgeval::testing

#endif  // HGEVAL_TESTS_SUPPORT_SHELL_COMMAND_H_
