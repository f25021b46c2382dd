// AzuriteProcess (azurite_process.h): fork/exec node with pipes, read the port line with a deadline.
#include "src/storage/testing/azurite_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "src/storage/azure_shared_key.h"
#include "src/storage/testing/s3rver_process.h"  // SourceDir, FindNode

namespace k3::storage::testing {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string AzuriteProcess::Unavailable() {
  if (FindNode().empty()) return "node is not on PATH (azurite needs Node 20)";
  const fs::path package = fs::path(SourceDir()) / "tests/storage/node_modules/azurite/package.json";
  std::error_code ec;
  if (!fs::exists(package, ec)) return "azurite is not installed; run `npm ci --prefix tests/storage`";
  return "";
}

std::string AzuriteProcess::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/" + std::string(kAzuriteAccount);
}

AzureAccess AzuriteProcess::SharedKeyAccess(const std::string& endpoint) {
  AzureAccess access;
  access.endpoint = endpoint;
  access.credentials.kind = AzureAuthKind::kSharedKey;
  access.credentials.decoded_key = Base64Decode(kAzuriteAccountKey).value();
  access.credentials.source = "azurite dev account key";
  return access;
}

Result<std::unique_ptr<AzuriteProcess>> AzuriteProcess::Start() {
  if (std::string why = Unavailable(); !why.empty()) return Unimplemented("{}", why);
  auto process = std::unique_ptr<AzuriteProcess>(new AzuriteProcess());
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) return IoError("pipe failed");
  const std::string node = FindNode();
  std::vector<std::string> args = {node, SourceDir() + "/tests/storage/azurite_main.cjs"};
  const pid_t pid = ::fork();
  if (pid < 0) return IoError("fork failed");
  if (pid == 0) {
    ::dup2(in_pipe[0], 0);
    ::dup2(out_pipe[1], 1);
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::execv(node.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  process->pid_ = pid;
  process->stdin_fd_ = in_pipe[1];

  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (line.find('\n') == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{out_pipe[0], POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    char buffer[256];
    const ssize_t n = ::read(out_pipe[0], buffer, sizeof(buffer));
    if (n <= 0) break;
    line.append(buffer, static_cast<size_t>(n));
  }
  ::close(out_pipe[0]);
  const size_t colon = line.find("\"port\":");
  if (colon == std::string::npos)
    return IoError("azurite did not report its port within 30 s (got '{}')", line);
  process->port_ = std::atoi(line.c_str() + colon + 7);
  if (process->port_ <= 0) return IoError("azurite reported a bad port: '{}'", line);
  return process;
}

AzuriteProcess::~AzuriteProcess() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);  // the wrapper stops azurite and exits when its stdin closes
  if (pid_ > 0) {
    int status = 0;
    bool exited = false;
    for (int i = 0; i < 50 && !exited; ++i) {  // at most 5 s
      exited = ::waitpid(pid_, &status, WNOHANG) == pid_;
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!exited) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
  }
}

}  // namespace k3::storage::testing
