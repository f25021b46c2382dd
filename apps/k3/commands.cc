// The two app-level helpers every subcommand uses (commands.h): the exit code the subcommand chose, and
// FailCommand. Shared by the k3 binary and the tests that run subcommands through CLI11.
#include <cstdio>
#include <string>

#include "apps/k3/commands.h"

namespace k3::app {

int& CommandExitCode() {
  static int code = 0;
  return code;
}

void FailCommand(const std::string& command, const std::string& message, int exit_code) {
  std::fprintf(stderr, "k3 %s: %s\n", command.c_str(), message.c_str());
  CommandExitCode() = exit_code;
}

}  // namespace k3::app
