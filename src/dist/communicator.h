// Communicator: the collectives one model needs across ranks (spec/distributed.md), behind one
// interface so nothing above src/dist names the library that implements them (Gloo over TCP on CPU
// today, NCCL on GPU later).
//
//   auto comm = dist::CreateCommunicator(options);   // rendezvous through rank 0's store
//   comm->AllReduceSum(partial);                      // [n] fp32, summed in an order fixed by world size
//   comm->Broadcast(bytes, /*root=*/0);               // rank 0's bytes to every rank
//
// Every call is collective: all ranks make the same calls in the same order with the same sizes. Each
// call waits at most timeout() and returns a Status on a timeout or a lost peer (never hangs, never
// aborts); after a failed call the communicator is unusable and every later call fails fast.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "src/base/status.h"

namespace k3::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;

  // data[i] = sum over ranks of data[i] (fp32). Every rank gets bit-identical results, and the order of
  // the summation depends only on world size and data.size(), never on timing.
  virtual Status AllReduceSum(std::span<float> data) = 0;
  // out = concatenation of every rank's `in` in rank order; out.size() == world_size() * in.size().
  virtual Status AllGather(std::span<const float> in, std::span<float> out) = 0;
  // Like AllGather, but only `root` receives (out is ignored elsewhere and may be empty there).
  virtual Status Gather(std::span<const float> in, std::span<float> out, int root) = 0;
  // Copies root's `data` into every rank's `data` (same size everywhere).
  virtual Status Broadcast(std::span<uint8_t> data, int root) = 0;
  virtual Status Barrier() = 0;

  // Deadline of each later call (default: CommunicatorOptions::timeout).
  virtual void SetTimeout(std::chrono::milliseconds timeout) = 0;
  virtual std::chrono::milliseconds timeout() const = 0;
};

struct CommunicatorOptions {
  int rank = 0;
  int world_size = 1;
  // Rank 0 serves the rendezvous store on master_addr:master_port; the others connect to it, retrying
  // with backoff until `timeout`.
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Network interface for the data connections ("" = the one that routes to master_addr); the flag
  // --dist-ifname, else GLOO_SOCKET_IFNAME.
  std::string ifname;
  // Start-up: how long to wait for every rank to join. Later calls: SetTimeout.
  std::chrono::milliseconds timeout{600'000};
  // Checked at rendezvous: ranks whose fingerprint differs (config hash, binary version) are refused
  // with a message naming the rank and both values.
  std::string fingerprint;
};

// world_size 1: a communicator whose collectives are copies (no network). Otherwise the TCP
// implementation; a rank that never joins fails start-up after options.timeout with a message naming it.
Result<std::unique_ptr<Communicator>> CreateCommunicator(const CommunicatorOptions& options);

// Variable-length broadcast on top of Broadcast: root's `bytes` reach every rank (a size first, then the
// payload; a size above max_bytes is an error on every rank, not an allocation).
Status BroadcastBytes(Communicator& comm, std::string* bytes, int root, size_t max_bytes);

}  // namespace k3::dist
