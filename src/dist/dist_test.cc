// The Gloo communicator and the rendezvous store with ranks as real processes on loopback: this test
// binary re-runs itself once per rank (K3_DIST_RANK, K3_DIST_WORLD, K3_DIST_PORT, K3_DIST_CASE) on the
// hidden test DISABLED_Rank, and the parent checks every rank's exit code and report line.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "src/dist/communicator.h"
#include "src/dist/rendezvous_store.h"
#include "src/dist/shm_allreduce.h"
#include "src/dist/store_frame.h"

namespace k3::dist {
namespace {

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

struct RankResult {
  int exit_code = -1;
  std::string output;
};

// Runs `world` ranks of `test_case` (ranks in `skip` are not started); each gets `timeout_ms`. Waits at
// most 120 s, then kills what is left.
std::vector<RankResult> RunRanks(const std::string& test_case, int world, int timeout_ms,
                                 std::vector<int> skip = {}, std::map<int, std::string> fingerprints = {}) {
  const int port = FreePort();
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string dir = ::testing::TempDir();
  std::vector<pid_t> pids(world, -1);
  std::vector<std::string> logs(world);
  for (int r = 0; r < world; ++r) {
    if (std::find(skip.begin(), skip.end(), r) != skip.end()) continue;
    logs[r] = dir + "/dist_test_" + std::to_string(getpid()) + "_" + std::to_string(r) + ".log";
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("K3_DIST_RANK", std::to_string(r).c_str(), 1);
      setenv("K3_DIST_WORLD", std::to_string(world).c_str(), 1);
      setenv("K3_DIST_PORT", std::to_string(port).c_str(), 1);
      setenv("K3_DIST_CASE", test_case.c_str(), 1);
      setenv("K3_DIST_TIMEOUT_MS", std::to_string(timeout_ms).c_str(), 1);
      setenv("K3_DIST_FINGERPRINT", fingerprints.count(r) ? fingerprints[r].c_str() : "same", 1);
      if (freopen(logs[r].c_str(), "w", stdout) == nullptr) _exit(90);
      dup2(fileno(stdout), 2);
      execl(exe.c_str(), exe.c_str(), "--gtest_filter=DistRanks.DISABLED_Rank",
            "--gtest_also_run_disabled_tests", static_cast<char*>(nullptr));
      _exit(91);
    }
    pids[r] = pid;
  }
  std::vector<RankResult> results(world);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (int r = 0; r < world; ++r) {
    if (pids[r] < 0) continue;
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    results[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(logs[r]);
    results[r].output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::filesystem::remove(logs[r]);
  }
  return results;
}

// The line "REPORT <text>" a rank printed, or "".
std::string Report(const RankResult& r) {
  const size_t at = r.output.find("REPORT ");
  if (at == std::string::npos) return "";
  return r.output.substr(at + 7, r.output.find('\n', at) - at - 7);
}

uint64_t Hash(std::span<const float> v) {
  uint64_t h = 1469598103934665603ULL;
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    h = (h ^ bits) * 1099511628211ULL;
  }
  return h;
}

// --- the rank side -------------------------------------------------------------------------------

int Env(const char* name) { return std::atoi(std::getenv(name)); }

Result<std::unique_ptr<Communicator>> Join() {
  CommunicatorOptions o;
  o.rank = Env("K3_DIST_RANK");
  o.world_size = Env("K3_DIST_WORLD");
  o.master_port = Env("K3_DIST_PORT");
  o.timeout = std::chrono::milliseconds(Env("K3_DIST_TIMEOUT_MS"));
  o.fingerprint = std::getenv("K3_DIST_FINGERPRINT");
  return CreateCommunicator(o);
}

// Each case prints "REPORT ..." and returns the exit code.
int RunCase(const std::string& name) {
  auto comm = Join();
  if (!comm.ok()) {
    std::printf("REPORT join failed: %s\n", comm.status().ToString().c_str());
    return 3;
  }
  Communicator& c = **comm;
  const int rank = c.rank(), world = c.world_size();
  if (name == "collectives") {
    std::string hashes;
    for (size_t n : {size_t{1}, size_t{7}, size_t{7168}, size_t{1} << 20}) {
      std::vector<float> x(n);
      std::mt19937 rng(static_cast<uint32_t>(rank * 7919 + n));
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (float& v : x) v = dist(rng);
      std::vector<float> exact(n);  // small integers: every order gives the same sum
      for (size_t i = 0; i < n; ++i) exact[i] = static_cast<float>((rank + 1) * (i % 13));
      if (!c.AllReduceSum(x).ok() || !c.AllReduceSum(exact).ok()) return 4;
      for (size_t i = 0; i < n; ++i) {
        if (exact[i] != static_cast<float>(world * (world + 1) / 2 * (i % 13))) return 5;
      }
      hashes += std::to_string(Hash(x)) + ",";
    }
    std::vector<float> mine = {static_cast<float>(rank), static_cast<float>(rank * 10)};
    std::vector<float> all(2 * world), at_root(rank == 1 ? 2 * world : 0);
    if (!c.AllGather(mine, all).ok() || !c.Gather(mine, at_root, 1).ok() || !c.Barrier().ok()) return 6;
    for (int r = 0; r < world; ++r) {
      if (all[2 * r] != r || all[2 * r + 1] != 10 * r) return 7;
      if (rank == 1 && (at_root[2 * r] != r || at_root[2 * r + 1] != 10 * r)) return 8;
    }
    for (size_t size : {size_t{0}, size_t{5}, size_t{100000}}) {
      std::string bytes = rank == 0 ? std::string(size, 'k') : std::string("junk");
      if (!BroadcastBytes(c, &bytes, 0, 1 << 20).ok() || bytes != std::string(size, 'k')) return 9;
    }
    std::string big = rank == 0 ? std::string(2048, 'x') : std::string();
    Status refused = BroadcastBytes(c, &big, 0, 1024);
    if (refused.ok() || refused.message().find("above the limit") == std::string::npos) return 10;
    std::printf("REPORT %s\n", hashes.c_str());
    return 0;
  }
  if (name == "peer_dies") {
    // Both ranks finish connecting (the barrier); then rank 0 waits inside an all-reduce while rank 1 is
    // killed with SIGKILL before it joins it.
    if (!c.Barrier().ok()) return 11;
    if (rank == 1) {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill(getpid(), SIGKILL);
      }).detach();
      std::this_thread::sleep_for(std::chrono::seconds(30));
      return 12;
    }
    std::vector<float> x(7168, 1.0f);
    const auto t0 = std::chrono::steady_clock::now();
    Status s = c.AllReduceSum(x);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Status again = c.Barrier();
    std::printf("REPORT %s | after %.1f s | again: %s\n", s.ToString().c_str(), took,
                again.ToString().c_str());
    return s.ok() ? 1 : 0;
  }
  return 99;
}

TEST(DistRanks, DISABLED_Rank) {
  const char* name = std::getenv("K3_DIST_CASE");
  ASSERT_NE(name, nullptr);
  std::fflush(stdout);
  const int code = RunCase(name);
  std::fflush(stdout);
  std::_Exit(code);
}

// --- the parent side -----------------------------------------------------------------------------

// Ranks on one machine all-reduce through shared memory; K3_DIST_SHM=0 keeps them on Gloo's TCP path,
// the one ranks on different machines take. Both are run.
class Transport {
 public:
  explicit Transport(bool shared_memory) {
    if (shared_memory) {
      unsetenv("K3_DIST_SHM");
    } else {
      setenv("K3_DIST_SHM", "0", 1);
    }
  }
  ~Transport() { unsetenv("K3_DIST_SHM"); }
};

TEST(GlooCommunicatorTest, CollectivesOnTwoAndFourRanksAgreeBitForBit) {
  for (bool shm : {true, false}) {
    Transport transport(shm);
    for (int world : {2, 4}) {
      auto results = RunRanks("collectives", world, 30000);
      for (int r = 0; r < world; ++r) {
        EXPECT_EQ(results[r].exit_code, 0)
            << (shm ? "shm" : "tcp") << " world " << world << " rank " << r << ":\n"
            << results[r].output;
        EXPECT_EQ(Report(results[r]), Report(results[0])) << "rank " << r << " summed differently";
      }
    }
  }
}

TEST(ShmAllReduceTest, ThreeRanksSumInRankOrderAcrossChunks) {
  const std::string name = fmt::format("/k3-test-{}", getpid());
  auto owner = ShmAllReduce::Create(name, 3);
  ASSERT_TRUE(owner.ok()) << owner.status().ToString();
  std::vector<std::unique_ptr<ShmAllReduce>> ranks;
  ranks.push_back(std::move(*owner));
  for (int r = 1; r < 3; ++r) {
    auto opened = ShmAllReduce::Open(name, r, 3);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    ranks.push_back(std::move(*opened));
  }
  for (int r = 0; r < 3; ++r) ranks[r]->Attach(r);
  ranks[0]->Unlink();
  EXPECT_FALSE(ShmAllReduce::Open(name, 1, 3).ok());   // the name is gone, the mappings stay
  const size_t n = ShmAllReduce::kSlotFloats * 2 + 5;  // three chunks, the last one short
  std::vector<std::vector<float>> data(3, std::vector<float>(n));
  for (int r = 0; r < 3; ++r) {
    for (size_t i = 0; i < n; ++i) data[r][i] = static_cast<float>((r + 1) * (i % 101)) + 0.1f * r;
  }
  std::vector<std::thread> threads;
  std::vector<Status> status(3);
  for (int round = 0; round < 3; ++round) {  // generations alternate between the two slot sets
    threads.clear();
    for (int r = 0; r < 3; ++r) {
      threads.emplace_back([&, r] { status[r] = ranks[r]->AllReduceSum(data[r], std::chrono::seconds(10)); });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < 3; ++r) ASSERT_TRUE(status[r].ok()) << status[r].ToString();
    for (int r = 1; r < 3; ++r) ASSERT_EQ(data[r], data[0]) << "round " << round << " rank " << r;
  }
  // One round by hand: ((a0 + a1) + a2) in fp32, then twice more on the result.
  float expect = static_cast<float>(1 * 7) + 0.0f;
  expect = expect + (static_cast<float>(2 * 7) + 0.1f);
  expect = expect + (static_cast<float>(3 * 7) + 0.2f);
  for (int round = 1; round < 3; ++round) expect = (expect + expect) + expect;
  EXPECT_EQ(data[0][7], expect);
}

TEST(ShmAllReduceTest, ARankThatNeverArrivesIsATimeoutNamingIt) {
  const std::string name = fmt::format("/k3-test-timeout-{}", getpid());
  auto owner = ShmAllReduce::Create(name, 2);
  ASSERT_TRUE(owner.ok()) << owner.status().ToString();
  (*owner)->Attach(0);
  std::vector<float> x(16, 1.0f);
  Status s = (*owner)->AllReduceSum(x, std::chrono::milliseconds(200));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("waiting for rank 1"), std::string::npos) << s.ToString();
}

TEST(GlooCommunicatorTest, FingerprintMismatchIsRefusedByEveryRank) {
  auto results = RunRanks("collectives", 2, 20000, {}, {{1, "k3 0.1.0 checkpoint 1234"}});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].exit_code, 3) << results[r].output;
    EXPECT_NE(Report(results[r]).find("rank 1 runs a different build or checkpoint"), std::string::npos)
        << Report(results[r]);
  }
}

TEST(GlooCommunicatorTest, ARankThatNeverJoinsIsNamedAfterTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  auto results = RunRanks("collectives", 3, 2000, /*skip=*/{2});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(results[0].exit_code, 3);
  EXPECT_NE(Report(results[0]).find("rank 2 of 3 never joined"), std::string::npos) << Report(results[0]);
  EXPECT_NE(Report(results[1]).find("rank 2 of 3 never joined"), std::string::npos) << Report(results[1]);
  EXPECT_LT(took, 30.0);
}

TEST(GlooCommunicatorTest, ALostPeerIsAStatusNamingItNotAHang) {
  for (bool shm : {true, false}) {
    Transport transport(shm);
    auto results = RunRanks("peer_dies", 2, 10000);
    EXPECT_EQ(results[0].exit_code, 0) << results[0].output;
    const std::string report = Report(results[0]);
    EXPECT_NE(report.find("lost rank 1"), std::string::npos) << (shm ? "shm: " : "tcp: ") << report;
    EXPECT_NE(report.find("again: IoError"), std::string::npos) << report;  // later calls fail fast
  }
}

TEST(GlooCommunicatorTest, AMasterPortInUseIsNamed) {
  auto busy = StoreServer::Start(0);
  ASSERT_TRUE(busy.ok());
  CommunicatorOptions o;
  o.world_size = 2;
  o.master_port = (*busy)->port();
  o.timeout = std::chrono::milliseconds(1000);
  auto comm = CreateCommunicator(o);
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("--master-port " + std::to_string(o.master_port) + " is in use"),
            std::string::npos)
      << comm.status().message();
}

TEST(GlooCommunicatorTest, OneProcessNeedsNoNetwork) {
  auto comm = CreateCommunicator(CommunicatorOptions{});
  ASSERT_TRUE(comm.ok());
  std::vector<float> x = {1.5f};
  EXPECT_TRUE((*comm)->AllReduceSum(x).ok());
  EXPECT_EQ(x[0], 1.5f);
  std::string bytes = "plan";
  EXPECT_TRUE(BroadcastBytes(**comm, &bytes, 0, 16).ok());
  EXPECT_EQ(bytes, "plan");
}

TEST(StoreTest, ClientRetriesUntilTheServerStarts) {
  const int port = FreePort();
  std::unique_ptr<StoreServer> server;
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    auto s = StoreServer::Start(port);
    ASSERT_TRUE(s.ok());
    server = std::move(*s);
  });
  auto client = StoreClient::Connect("127.0.0.1", port, 1, std::chrono::seconds(20));
  late.join();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  ASSERT_TRUE((*client)->Set("a", "value").ok());
  auto got = (*client)->Get("a", std::chrono::milliseconds(100));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, "value");
  auto missing = (*client)->Get("b", std::chrono::milliseconds(100));
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'b'"), std::string::npos);
  EXPECT_FALSE((*client)->Wait({"a", "c"}, std::chrono::milliseconds(100)).ok());
  client->reset();
  for (int i = 0; i < 100 && server->LostRanks().empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(server->LostRanks(), std::vector<int>{1});  // the store saw rank 1's connection close
}

TEST(StoreTest, NoServerIsAnErrorNamingTheAddress) {
  auto client = StoreClient::Connect("127.0.0.1", FreePort(), 1, std::chrono::milliseconds(500));
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find("no rendezvous store answered at 127.0.0.1:"), std::string::npos);
}

TEST(StoreTest, MalformedFramesAreErrorsAndGarbageClosesTheConnection) {
  Frame set{FrameKind::kSet, {"key", std::string("\0v", 2)}};
  const std::string encoded = EncodeFrame(set);
  auto back = DecodeFrameBody(std::string_view(encoded).substr(4));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, set);
  for (size_t n = 4; n < encoded.size(); ++n)
    EXPECT_FALSE(DecodeFrameBody(encoded.substr(4, n - 4)).ok()) << n;
  EXPECT_FALSE(DecodeFrameBody(std::string(1, '\x09')).ok());
  std::string wait = EncodeFrame(Frame{FrameKind::kWait, {"a"}, 5});
  wait[5] = '\xff';  // key count far above what the frame holds
  EXPECT_FALSE(DecodeFrameBody(std::string_view(wait).substr(4)).ok());

  auto server = StoreServer::Start(0);
  ASSERT_TRUE(server.ok());
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>((*server)->port()));
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const char oversized[] = {'\xff', '\xff', '\xff', '\x7f'};  // a 2 GiB frame: refused, not allocated
  ASSERT_EQ(send(fd, oversized, 4, 0), 4);
  char buf[64];
  ssize_t r;
  while ((r = recv(fd, buf, sizeof(buf), 0)) > 0) {
  }
  EXPECT_EQ(r, 0);  // the server closed the connection
  close(fd);
  // The server still serves others.
  auto client = StoreClient::Connect("127.0.0.1", (*server)->port(), 3, std::chrono::seconds(5));
  ASSERT_TRUE(client.ok());
  EXPECT_TRUE((*client)->Set("x", "y").ok());
}

}  // namespace
}  // namespace k3::dist
