// AzuriteProcess: runs the pinned azurite Blob emulator (tests/storage/azurite_main.cjs, `npm ci --prefix
// tests/storage`) as a child process on a free loopback port, in memory, for tests of AzureStore and
// `k3 weights`. The child exits when this object (or the whole test process) goes away: it watches its
// stdin pipe.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "src/base/status.h"
#include "src/storage/azure_credentials.h"

namespace k3::storage::testing {

class AzuriteProcess {
 public:
  // Why azurite cannot run here ("node not found", "run npm ci --prefix tests/storage"), or "".
  static std::string Unavailable();
  // Starts azurite; waits at most 30 s for it to listen.
  static Result<std::unique_ptr<AzuriteProcess>> Start();
  ~AzuriteProcess();
  AzuriteProcess(const AzuriteProcess&) = delete;
  AzuriteProcess& operator=(const AzuriteProcess&) = delete;

  int port() const { return port_; }
  // The path-style blob endpoint of the dev account: http://127.0.0.1:PORT/devstoreaccount1.
  std::string endpoint() const;
  // The dev account's Shared Key access at `endpoint` (the server itself, or a proxy in front of it).
  static AzureAccess SharedKeyAccess(const std::string& endpoint);

 private:
  AzuriteProcess() = default;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int port_ = 0;
};

}  // namespace k3::storage::testing
