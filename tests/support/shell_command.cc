#include "tests/support/shell_command.h"

#include <sys/wait.h>

#include <cstdio>
#include <utility>

namespace hgeval::testing {

ShellResult RunShell(const std::string& command) {
  ShellResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[1 << 16];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

int RunShell(const std::string& command, std::string* out) {
  ShellResult result = RunShell(command);
  *out = std::move(result.out);
  return result.exit_code;
}

}  // namespace hgeval::testing
