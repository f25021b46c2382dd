// FaultProxy: a loopback TCP proxy between a client under test and a real server (s3rver) that injects
// the faults object stores show in production, one connection at a time:
//   FailNextConnections(n): the next n connections get "HTTP 503 SlowDown" and are closed;
//   DropNextConnectionAfter(bytes): the next connection forwards that many bytes of the server's reply,
//     then both sides are closed (a reset mid-body).
// Other connections are forwarded untouched. Every wait is bounded (poll with timeouts), and the
// destructor stops and joins every thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

#include "src/base/status.h"

namespace k3::storage::testing {

class FaultProxy {
 public:
  static Result<std::unique_ptr<FaultProxy>> Start(int upstream_port);
  ~FaultProxy();

  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void FailNextConnections(int count) { fail_next_ = count; }
  void DropNextConnectionAfter(size_t bytes) { drop_after_ = static_cast<long long>(bytes); }
  int connections() const { return connections_; }
  int failed() const { return failed_; }
  int dropped() const { return dropped_; }

 private:
  FaultProxy() = default;
  void AcceptLoop();
  void Serve(int client);
  void Answer503(int client);
  void Forward(int client, long long drop_after);

  int listen_fd_ = -1;
  int port_ = 0;
  int upstream_port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> fail_next_{0};
  std::atomic<long long> drop_after_{-1};
  std::atomic<int> connections_{0}, failed_{0}, dropped_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> handlers_;
};

}  // namespace k3::storage::testing
