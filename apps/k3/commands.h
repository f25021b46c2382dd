// One Register<Name>Command per subcommand; each lives in cmd_<name>.cc and only turns flags into
// library calls. A command's callback returns its process exit code through CommandExitCode (both helpers
// are defined in commands.cc).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "src/base/status.h"
#include "src/dist/launch.h"

namespace k3::app {

// The process's command line as main received it (local ranks are started as copies of it).
std::vector<std::string>& CommandLine();

// vLLM's parallelism flags, shared by `k3 serve` and `k3 run` (spec/distributed.md):
// --tensor-parallel-size, --pipeline-parallel-size, --data-parallel-size, --enable-expert-parallel,
// --nnodes, --node-rank, --master-addr, --master-port, --headless, --dist-timeout, --dist-ifname.
void AddGroupFlags(CLI::App* cmd, dist::GroupFlags* flags, const std::string& group_name);

// Resolves the group (flags + LWS environment) and, on the first process of a node, starts the node's
// other ranks; a local rank that dies before the group is formed ends this process (exit 3) with its
// description. Errors are usage errors (exit 2) naming the flag.
Result<dist::GroupPlan> ResolveGroupFromFlags(const dist::GroupFlags& flags);
Result<std::unique_ptr<dist::LocalRanks>> StartLocalRanks(const dist::GroupPlan& plan, const std::string& command);
// Threads per rank when --threads is 0: the cores divided among the node's ranks (at least 1).
int DefaultThreadsPerRank(const dist::GroupPlan& plan, int threads_flag);

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
void RegisterWeightsCommand(CLI::App& app);

}  // namespace k3::app
