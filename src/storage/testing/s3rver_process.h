// S3rverProcess: runs the pinned s3rver emulator (tests/storage, `npm ci --prefix tests/storage`) as a
// child process on a free loopback port with a temporary directory, for tests of S3Store and
// `k3 weights`. The child exits when this object (or the whole test process) goes away: it watches its
// stdin pipe.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/storage/aws_credentials.h"

namespace k3::storage::testing {

class S3rverProcess {
 public:
  // Why s3rver cannot run here ("node not found", "run npm ci --prefix tests/storage"), or "".
  static std::string Unavailable();
  // Starts s3rver with these buckets; waits at most 20 s for it to listen.
  static Result<std::unique_ptr<S3rverProcess>> Start(const std::vector<std::string>& buckets);
  ~S3rverProcess();
  S3rverProcess(const S3rverProcess&) = delete;
  S3rverProcess& operator=(const S3rverProcess&) = delete;

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // s3rver's built-in account (access key S3RVER, secret S3RVER).
  static AwsCredentials Credentials();

 private:
  S3rverProcess() = default;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int port_ = 0;
  std::string directory_;
};

// The repository root (K3_SOURCE_DIR from the environment or the build).
std::string SourceDir();

// The first executable `node` on PATH, or "" when there is none.
std::string FindNode();

}  // namespace k3::storage::testing
