// S3rverProcess (s3rver_process.h): fork/exec node with pipes, read the port line with a deadline.
#include "src/storage/testing/s3rver_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace k3::storage::testing {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::string FindNode() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    size_t end = dirs.find(':', pos);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(pos, end - pos) + "/node";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    pos = end + 1;
  }
  return "";
}

std::string SourceDir() {
  if (const char* dir = std::getenv("K3_SOURCE_DIR")) return dir;
#ifdef K3_SOURCE_DIR
  return K3_SOURCE_DIR;
#else
  return ".";
#endif
}

std::string S3rverProcess::Unavailable() {
  if (FindNode().empty()) return "node is not on PATH (s3rver needs Node 20)";
  const fs::path package = fs::path(SourceDir()) / "tests/storage/node_modules/s3rver/package.json";
  std::error_code ec;
  if (!fs::exists(package, ec)) return "s3rver is not installed; run `npm ci --prefix tests/storage`";
  return "";
}

AwsCredentials S3rverProcess::Credentials() {
  return AwsCredentials{"S3RVER", "S3RVER", "", "s3rver test keys"};
}

Result<std::unique_ptr<S3rverProcess>> S3rverProcess::Start(const std::vector<std::string>& buckets) {
  if (std::string why = Unavailable(); !why.empty()) return Unimplemented("{}", why);
  char dir_template[] = "/tmp/k3-s3rver-XXXXXX";
  if (::mkdtemp(dir_template) == nullptr) return IoError("mkdtemp failed");
  auto process = std::unique_ptr<S3rverProcess>(new S3rverProcess());
  process->directory_ = dir_template;

  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0) return IoError("pipe failed");
  const std::string node = FindNode();
  const std::string script = SourceDir() + "/tests/storage/s3rver_main.cjs";
  // s3rver 3.7.1 encrypts continuation tokens with DES, which Node 20's OpenSSL 3 only has in its legacy
  // provider (without it, every truncated listing is an HTTP 500 ERR_OSSL_EVP_UNSUPPORTED).
  std::vector<std::string> args = {node, "--openssl-legacy-provider", script, process->directory_};
  args.insert(args.end(), buckets.begin(), buckets.end());
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
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
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
    return IoError("s3rver did not report its port within 20 s (got '{}')", line);
  process->port_ = std::atoi(line.c_str() + colon + 7);
  if (process->port_ <= 0) return IoError("s3rver reported a bad port: '{}'", line);
  return process;
}

S3rverProcess::~S3rverProcess() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);  // the child exits when its stdin closes
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
  std::error_code ec;
  if (!directory_.empty()) std::filesystem::remove_all(directory_, ec);
}

}  // namespace k3::storage::testing
