// The rendezvous store of a group (spec/distributed.md, "Processes"): a small key-value server on rank 0
// (the role PyTorch's TCPStore plays for Gloo) and the client every rank uses to reach it.
//
// Keys are written once and read by every rank; Get and Wait block until a key exists or the deadline
// passes. Every rank keeps its connection open for its whole life, and says which rank it is when it
// joins, so rank 0 can tell which rank's process went away when a collective fails (LostRanks).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "src/base/status.h"
#include "src/dist/store_frame.h"

namespace k3::dist {

class StoreServer {
 public:
  // Listens on every interface at `port`; an error names the port when it is taken.
  static Result<std::unique_ptr<StoreServer>> Start(int port);
  ~StoreServer();  // closes every connection and joins its threads
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const;
  // A random value the server holds under the key "k3/server-nonce" from its start, so rank 0 can tell
  // its own store from another program that answers on the same port.
  const std::string& nonce() const;
  // Ranks that announced themselves and whose connection has since closed, in order.
  std::vector<int> LostRanks() const;

  struct Impl;

 private:
  explicit StoreServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class StoreClient {
 public:
  // Connects to host:port, retrying with exponential backoff (50 ms doubling to 2 s, +-25 % jitter) until
  // `timeout` has passed; then announces `rank`.
  static Result<std::unique_ptr<StoreClient>> Connect(const std::string& host, int port, int rank,
                                                      std::chrono::milliseconds timeout);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  Status Set(const std::string& key, const std::string& value);
  // The value, or an error naming the key when it does not appear within `timeout`.
  Result<std::string> Get(const std::string& key, std::chrono::milliseconds timeout);
  // Ok once every key exists; else an error naming the first missing key.
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // True while the connection to the server is open (false once rank 0's process is gone).
  bool Connected();

 private:
  StoreClient(int fd, std::string where) : fd_(fd), where_(std::move(where)) {}
  // Sends `request` and reads the reply, waiting at most `timeout` (plus a margin for the network).
  Result<Frame> Call(const Frame& request, std::chrono::milliseconds timeout);

  int fd_;
  std::string where_;  // "host:port" for messages
  std::mutex mu_;      // one request at a time
};

}  // namespace k3::dist
