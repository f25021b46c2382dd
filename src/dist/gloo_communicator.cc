// CreateCommunicator (communicator.h): the one-process communicator and the Gloo one (TCP transport),
// with the group's rendezvous through rank 0's store (rendezvous_store.h):
//   1. rank 0 serves the store; every rank connects (retrying until the start-up timeout) and announces
//      itself under k3/joined/<rank> with its fingerprint under k3/fingerprint/<rank>;
//   2. rank 0 waits for every rank (a timeout names the ranks that never joined), compares fingerprints
//      and publishes its verdict under k3/verdict ("ok" or why not), which every rank reads;
//   3. Gloo connects every pair of ranks through the store (keys under gloo/);
//   4. when every rank runs on this machine (same boot id, network namespace and host name under
//      k3/machine/<rank>), rank 0 creates a shared-memory segment (k3/shm-name) that every rank maps
//      (k3/shm-open/<rank>): all-reduces then go through it (shm_allreduce.h), the other collectives
//      through Gloo. K3_DIST_SHM=0 keeps every collective on Gloo.
// Collectives catch every Gloo exception and turn it into a Status naming the lost rank where rank 0's
// store saw that rank's connection close; a communicator that failed once fails every later call.
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include "src/dist/communicator.h"
#include "src/dist/rendezvous_store.h"
#include "src/dist/shm_allreduce.h"

namespace k3::dist {
namespace {

using Clock = std::chrono::steady_clock;

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Status AllReduceSum(std::span<float>) override { return OkStatus(); }
  Status AllGather(std::span<const float> in, std::span<float> out) override {
    std::copy(in.begin(), in.end(), out.begin());
    return OkStatus();
  }
  Status Gather(std::span<const float> in, std::span<float> out, int) override { return AllGather(in, out); }
  Status Broadcast(std::span<uint8_t>, int) override { return OkStatus(); }
  Status Barrier() override { return OkStatus(); }
  void SetTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  std::chrono::milliseconds timeout() const override { return timeout_; }

 private:
  std::chrono::milliseconds timeout_{600'000};
};

// Gloo's view of our store: its keys live under "gloo/"; failures are Gloo's exceptions.
class GlooStore final : public gloo::rendezvous::Store {
 public:
  GlooStore(StoreClient* client, std::chrono::milliseconds timeout) : client_(client), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    Check(client_->Set("gloo/" + key, std::string(data.begin(), data.end())));
  }
  std::vector<char> get(const std::string& key) override {
    auto value = client_->Get("gloo/" + key, timeout_);
    Check(value.status());
    return std::vector<char>(value->begin(), value->end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const std::string& k : keys) prefixed.push_back("gloo/" + k);
    Check(client_->Wait(prefixed, timeout));
  }

 private:
  static void Check(const Status& s) {
    if (!s.ok()) throw gloo::IoException(s.ToString());
  }
  StoreClient* client_;
  std::chrono::milliseconds timeout_;
};

// The local address that routes to `host` (what the other ranks can reach this one at).
Result<std::string> LocalAddressToward(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || found == nullptr)
    return NotFound("cannot resolve the master address '{}'", host);
  const int fd = socket(found->ai_family, SOCK_DGRAM, 0);
  std::string out;
  if (fd >= 0 && connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_storage local{};
    socklen_t len = sizeof(local);
    char text[INET6_ADDRSTRLEN] = {};
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      if (local.ss_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&local)->sin_addr, text, sizeof(text));
      } else {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr, text, sizeof(text));
      }
      out = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(found);
  if (out.empty()) return NotFound("no route from this machine to the master address '{}'", host);
  return out;
}

class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(int rank, int world, std::unique_ptr<StoreServer> server,
                   std::unique_ptr<StoreClient> client, std::shared_ptr<gloo::rendezvous::Context> context,
                   std::unique_ptr<ShmAllReduce> shm, std::chrono::milliseconds timeout)
      : rank_(rank),
        world_(world),
        server_(std::move(server)),
        client_(std::move(client)),
        context_(std::move(context)),
        shm_(std::move(shm)),
        timeout_(timeout) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  Status AllReduceSum(std::span<float> data) override {
    if (shm_ != nullptr) {
      if (!broken_.ok()) return broken_;
      Status s = shm_->AllReduceSum(data, timeout_);
      if (!s.ok()) broken_ = s;
      return s;
    }
    return Run("all-reduce", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(data.data(), data.size());
      // BCUBE, not RING: on loopback and veth a 28 KiB all-reduce (one decode token's D row) took 3.9 ms
      // median with the ring and 0.18 ms with bcube, and every size up to 16 MiB was faster (dist_bench,
      // K3_DIST_SHM=0, 2 ranks). Each element is reduced on one rank in an order fixed by the world size
      // and then copied to the others, so every rank holds the same bits, as with the ring.
      opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::BCUBE);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    });
  }
  Status AllGather(std::span<const float> in, std::span<float> out) override {
    if (out.size() != in.size() * static_cast<size_t>(world_))
      return Internal("all-gather: output of {} floats for {} ranks x {}", out.size(), world_, in.size());
    return Run("all-gather", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(const_cast<float*>(in.data()), in.size());
      opts.setOutput(out.data(), out.size());
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
    });
  }
  Status Gather(std::span<const float> in, std::span<float> out, int root) override {
    if (rank_ == root && out.size() != in.size() * static_cast<size_t>(world_))
      return Internal("gather: output of {} floats for {} ranks x {}", out.size(), world_, in.size());
    return Run("gather", [&] {
      gloo::GatherOptions opts(context_);
      opts.setInput(const_cast<float*>(in.data()), in.size());
      if (rank_ == root) opts.setOutput(out.data(), out.size());
      opts.setRoot(root);
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::gather(opts);
    });
  }
  Status Broadcast(std::span<uint8_t> data, int root) override {
    return Run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(data.data(), data.size());
      opts.setRoot(root);
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
    });
  }
  Status Barrier() override {
    return Run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(NextTag());
      opts.setTimeout(timeout_);
      gloo::barrier(opts);
    });
  }
  void SetTimeout(std::chrono::milliseconds timeout) override {
    timeout_ = timeout;
    context_->setTimeout(timeout);
  }
  std::chrono::milliseconds timeout() const override { return timeout_; }

 private:
  uint32_t NextTag() { return tag_++ & 0x7fffffffu; }

  template <typename Fn>
  Status Run(const char* what, Fn fn) {
    if (!broken_.ok()) return broken_;
    try {
      fn();
      return OkStatus();
    } catch (const std::exception& e) {
      broken_ = IoError("rank {}: {} failed: {}; {}", rank_, what, e.what(), WhoIsLost());
    }
    return broken_;
  }

  // Names the lost rank where it can be known: rank 0's store saw that rank's connection close; any other
  // rank sees its own connection to rank 0 close when rank 0 is gone.
  std::string WhoIsLost() {
    if (server_ != nullptr) {
      for (int i = 0; i < 20; ++i) {  // the store notices a closed connection within its poll interval
        const std::vector<int> lost = server_->LostRanks();
        if (!lost.empty()) return fmt::format("lost rank {} (its process is gone)", fmt::join(lost, ", "));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      return "a rank stopped answering (its process may be alive but stuck, or the network is down)";
    }
    if (!client_->Connected()) return "lost rank 0 (its process is gone)";
    return "a peer rank stopped answering";
  }

  int rank_;
  int world_;
  std::unique_ptr<StoreServer> server_;  // rank 0
  std::unique_ptr<StoreClient> client_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::unique_ptr<ShmAllReduce> shm_;  // all ranks on this machine: all-reduces through shared memory
  std::chrono::milliseconds timeout_;
  uint32_t tag_ = 1;
  Status broken_;
};

// This machine as the ranks must share it to share memory: boot id (the kernel instance), network
// namespace (pods on one node have their own, and may not share /dev/shm) and host name.
std::string MachineIdentity() {
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat ns {};
  const unsigned long long netns = stat("/proc/self/ns/net", &ns) == 0 ? ns.st_ino : 0;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return fmt::format("{}/{}/{}", boot, netns, host);
}

// Step 4 of the rendezvous (see the top of this file): a shared-memory all-reduce when every rank is on
// this machine and every rank could map the segment; nullptr otherwise (Gloo then carries everything).
// Every rank reads the same keys, so every rank takes the same decision.
Result<std::unique_ptr<ShmAllReduce>> SharedMemoryAllReduce(const CommunicatorOptions& o, StoreClient& client,
                                                            std::chrono::milliseconds timeout) {
  K3_RETURN_IF_ERROR(client.Set(fmt::format("k3/machine/{}", o.rank), MachineIdentity()));
  bool local = o.world_size <= ShmAllReduce::kMaxRanks;
  for (int r = 0; r < o.world_size; ++r) {
    K3_ASSIGN_OR_RETURN(std::string theirs, client.Get(fmt::format("k3/machine/{}", r), timeout));
    local &= theirs == MachineIdentity();
  }
  if (!local) return std::unique_ptr<ShmAllReduce>();
  std::unique_ptr<ShmAllReduce> shm;
  if (o.rank == 0) {
    const std::string name = fmt::format("/k3-allreduce-{}-{}", getpid(), o.master_port);
    auto created = ShmAllReduce::Create(name, o.world_size);
    if (created.ok()) shm = std::move(*created);
    K3_RETURN_IF_ERROR(client.Set("k3/shm-name", created.ok() ? name : ""));
    K3_RETURN_IF_ERROR(client.Set("k3/shm-open/0", created.ok() ? "ok" : created.status().ToString()));
  } else {
    K3_ASSIGN_OR_RETURN(std::string name, client.Get("k3/shm-name", timeout));
    Status opened = InvalidArgument("rank 0 has no segment");
    if (!name.empty()) {
      auto o_shm = ShmAllReduce::Open(name, o.rank, o.world_size);
      opened = o_shm.status();
      if (o_shm.ok()) shm = std::move(*o_shm);
    }
    K3_RETURN_IF_ERROR(
        client.Set(fmt::format("k3/shm-open/{}", o.rank), opened.ok() ? "ok" : opened.ToString()));
  }
  bool everyone = true;
  for (int r = 0; r < o.world_size; ++r) {
    // Read in place: moved into a local string, g++ 12 -O2 warns (-Wmaybe-uninitialized) on the compare.
    const Result<std::string> state = client.Get(fmt::format("k3/shm-open/{}", r), timeout);
    K3_RETURN_IF_ERROR(state.status());
    everyone &= state.value() == "ok";
  }
  if (!everyone) return std::unique_ptr<ShmAllReduce>();  // the segment (if any) goes with `shm`
  shm->Attach(o.rank);
  if (o.rank == 0) shm->Unlink();  // every rank has mapped it: no name is left behind, whatever happens
  return shm;
}

Result<std::unique_ptr<Communicator>> CreateGloo(const CommunicatorOptions& o) {
  // Gloo writes to its sockets without MSG_NOSIGNAL: a write to a rank that just died would kill this
  // process with SIGPIPE instead of failing the collective (seen: rank 0 gone with signal 13 before it
  // could answer 503). A failed write is an error we handle.
  signal(SIGPIPE, SIG_IGN);
  const auto deadline = Clock::now() + o.timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  };
  std::unique_ptr<StoreServer> server;
  if (o.rank == 0) {
    K3_ASSIGN_OR_RETURN(server, StoreServer::Start(o.master_port));
  }
  const std::string store_host = o.rank == 0 ? "127.0.0.1" : o.master_addr;
  auto connected = StoreClient::Connect(store_host, o.master_port, o.rank,
                                        o.rank == 0 ? std::chrono::milliseconds(5000) : o.timeout);
  // Rank 0 must reach its own store: another program answering on the port (bound to one address
  // while ours took the wildcard) is a port in use.
  const auto in_use = [&] {
    return InvalidArgument(
        "--master-port {} is in use on this machine (another k3 group or program listens there); choose a "
        "free port with --master-port",
        o.master_port);
  };
  if (o.rank == 0 && !connected.ok()) return in_use();
  K3_RETURN_IF_ERROR(connected.status());
  std::unique_ptr<StoreClient> client = std::move(*connected);
  if (o.rank == 0) {
    auto nonce = client->Get("k3/server-nonce", std::chrono::milliseconds(2000));
    if (!nonce.ok() || *nonce != server->nonce()) return in_use();
  }
  K3_RETURN_IF_ERROR(client->Set(fmt::format("k3/fingerprint/{}", o.rank), o.fingerprint));
  if (o.rank == 0) {
    std::vector<std::string> missing;
    std::string verdict = "ok";
    for (int r = 1; r < o.world_size; ++r) {
      if (!client->Wait({fmt::format("k3/joined/{}", r)}, left()).ok()) missing.push_back(std::to_string(r));
    }
    if (!missing.empty()) {
      verdict = fmt::format(
          "rank{} {} of {} never joined the group at {}:{} within {} s (started? same --master-port? "
          "reachable?)",
          missing.size() > 1 ? "s" : "", fmt::join(missing, ", "), o.world_size, o.master_addr, o.master_port,
          o.timeout.count() / 1000.0);
    } else {
      for (int r = 1; r < o.world_size && verdict == "ok"; ++r) {
        K3_ASSIGN_OR_RETURN(std::string theirs, client->Get(fmt::format("k3/fingerprint/{}", r), left()));
        if (theirs != o.fingerprint) {
          verdict = fmt::format(
              "rank {} runs a different build or checkpoint: its fingerprint is '{}', rank 0's is '{}' "
              "(every rank must serve the same checkpoint with the same k3 version)",
              r, theirs, o.fingerprint);
        }
      }
    }
    K3_RETURN_IF_ERROR(client->Set("k3/verdict", verdict));
    if (verdict != "ok") {
      // The store dies with this process: keep it up until the ranks that joined have read why (under
      // load they read it after rank 0 returned and saw only a closed connection), 5 s at most.
      std::vector<std::string> read;
      for (int r = 1; r < o.world_size; ++r) {
        if (std::find(missing.begin(), missing.end(), std::to_string(r)) == missing.end())
          read.push_back(fmt::format("k3/verdict-read/{}", r));
      }
      (void)client->Wait(read, std::chrono::milliseconds(5000));
      return InvalidArgument("{}", verdict);
    }
  } else {
    // Rank 0 publishes its verdict only after its own wait for every rank, so give it a margin.
    K3_ASSIGN_OR_RETURN(std::string verdict, client->Get("k3/verdict", left() + std::chrono::seconds(15)));
    if (verdict != "ok") {
      (void)client->Set(fmt::format("k3/verdict-read/{}", o.rank), "1");
      return InvalidArgument("rank 0 refused the group: {}", verdict);
    }
  }
  gloo::transport::tcp::attr attr;
  if (!o.ifname.empty()) {
    attr.iface = o.ifname;
  } else {
    // The address the other ranks reach this one at: the one that routes toward the master (rank 0
    // itself is the master; its own address toward it is loopback only when the group is local).
    K3_ASSIGN_OR_RETURN(attr.hostname, LocalAddressToward(o.master_addr, o.master_port));
  }
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.world_size);
    context->setTimeout(left());
    GlooStore store(client.get(), left());
    context->connectFullMesh(store, device);
    std::unique_ptr<ShmAllReduce> shm;
    if (const char* env = std::getenv("K3_DIST_SHM"); env == nullptr || std::string(env) != "0") {
      K3_ASSIGN_OR_RETURN(shm, SharedMemoryAllReduce(o, *client, left()));
    }
    return std::unique_ptr<Communicator>(
        std::make_unique<GlooCommunicator>(o.rank, o.world_size, std::move(server), std::move(client),
                                           std::move(context), std::move(shm), o.timeout));
  } catch (const std::exception& e) {
    return IoError("rank {}: connecting to the other ranks failed: {} (interface: {})", o.rank, e.what(),
                   o.ifname.empty() ? attr.hostname : o.ifname);
  }
}

}  // namespace

Result<std::unique_ptr<Communicator>> CreateCommunicator(const CommunicatorOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size)
    return InvalidArgument("rank {} of a group of {} is not a rank", options.rank, options.world_size);
  if (options.world_size == 1) return std::unique_ptr<Communicator>(std::make_unique<LocalCommunicator>());
  return CreateGloo(options);
}

}  // namespace k3::dist
