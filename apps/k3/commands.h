// One Register<Name>Command per subcommand; each lives in cmd_<name>.cc and only turns flags into
// library calls. A command's callback returns its process exit code through CommandExitCode (both helpers
// are defined in commands.cc).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace k3::app {

// Exit code chosen by the subcommand that ran (0 when none ran, e.g. `k3 --version`).
int& CommandExitCode();

// Prints "k3 <command>: <message>" to stderr and sets exit code 1 (2 for usage errors).
void FailCommand(const std::string& command, const std::string& message, int exit_code = 1);

void RegisterPlanCommand(CLI::App& app);
void RegisterRenderCommand(CLI::App& app);
void RegisterLintCommand(CLI::App& app);
void RegisterGenModelCommand(CLI::App& app);
void RegisterRunCommand(CLI::App& app);
void RegisterTokenizeCommand(CLI::App& app);
void RegisterRenderChatCommand(CLI::App& app);
void RegisterServeCommand(CLI::App& app);
void RegisterVerifyCommand(CLI::App& app);
void RegisterBenchCommand(CLI::App& app);

}  // namespace k3::app
