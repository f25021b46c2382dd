// bench/dist_bench: latency and bandwidth of the all-reduce (dist::Communicator::AllReduceSum) between
// rank processes of one machine, for the sizes K3 sends per decode token (spec/distributed.md), with 2 and
// 4 ranks: through shared memory (what ranks on one machine use), or over Gloo's TCP (bcube) with
// K3_DIST_SHM=0 (what ranks on different machines use), on loopback.
//
//   dist_bench [--worlds 2,4] [--scale 1]          K3_DIST_SHM=0 dist_bench   for the TCP path
//
// The bench re-runs itself once per rank (K3_DIST_BENCH_RANK / _WORLD / _PORT); rank 0 prints the table.
// Each timed call is preceded by a Barrier, so a figure is one all-reduce from a common start, not a
// pipeline of them. Per size: median and 90th percentile of the timed calls on rank 0, and the slowest
// rank's median (often bimodal on a loaded 2-core machine: see docs/distributed.md).
// algbw = payload bytes / median; busbw = algbw * 2(t-1)/t (what a ring moves per rank). --scale
// multiplies the number of timed calls (default: 200 for small sizes down to 9 for 16 MiB).
// A second table times Communicator::Broadcast from rank 0 of an image's embedding rows, what the step
// plan carries once per image under tensor parallelism (docs/distributed.md "Images"): K3's 448 x 448
// (256 rows) and 1024 x 1024 (1,369 rows) images, rows of D = 7168 bf16.
// Machines running this are often shared: the load average before and after is printed too.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

#include "bench/machine_limits.h"
#include "src/dist/communicator.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Size {
  const char* label;
  size_t floats;  // fp32 elements of the all-reduced vector
  int timed_calls;
};

// D = 7168 (hidden width: the KDA/MLA o_proj, MLP and shared-expert all-reduces), Lw = 3584 (the routed
// experts' latent combine), then 4 KiB, 1 MiB and 16 MiB of floats.
constexpr Size kSizes[] = {
    {"D (7168 f32)", 7168, 200}, {"Lw (3584 f32)", 3584, 200}, {"4 KiB", 1024, 200},
    {"1 MiB", 262144, 40},       {"16 MiB", 4194304, 9},
};

// Broadcast payloads: an image's projector rows [tokens, 7168] bf16.
struct BroadcastSize {
  const char* label;
  size_t bytes;
  int timed_calls;
};
constexpr BroadcastSize kBroadcastSizes[] = {
    {"448x448 image", 256 * 7168 * 2, 20},
    {"1024x1024 img", 1369 * 7168 * 2, 9},
};

using k3::bench::LoadAverage;
using k3::bench::Median;

// A port no one listens on now (bound to 0 and released; a race with another program is possible and
// shows as "in use" at start-up, never as a wrong figure).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  return ok ? ntohs(addr.sin_port) : 0;
}

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? -1 : std::atoi(v);
}

// One rank: joins the group, times every size, and rank 0 prints the table. Returns the exit code.
int RunRank(int rank, int world, int port, double scale) {
  k3::dist::CommunicatorOptions options;
  options.rank = rank;
  options.world_size = world;
  options.master_port = port;
  options.timeout = std::chrono::seconds(120);
  options.fingerprint = "dist_bench";
  auto created = k3::dist::CreateCommunicator(options);
  if (!created.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, created.status().ToString().c_str());
    return 3;
  }
  k3::dist::Communicator& comm = **created;
  comm.SetTimeout(std::chrono::seconds(60));
  if (rank == 0) {
    const char* shm = std::getenv("K3_DIST_SHM");
    const bool tcp = shm != nullptr && std::string(shm) == "0";
    std::printf(
        "\n%d ranks (processes) on 127.0.0.1, all-reduce %s, fp32\n", world,
        tcp ? "over Gloo TCP (bcube; K3_DIST_SHM=0)" : "through shared memory (ranks on one machine)");
    std::printf("%-14s %10s %6s %10s %10s %10s %10s %10s\n", "size", "bytes", "calls", "median us", "p90 us",
                "slowest us", "algbw GB/s", "busbw GB/s");
  }
  const float expected = static_cast<float>(world * (world + 1) / 2);
  for (const Size& size : kSizes) {
    std::vector<float> data(size.floats);
    const int timed = std::max(3, static_cast<int>(size.timed_calls * scale));
    const int warmup = std::max(2, timed / 10);
    std::vector<double> seconds;
    for (int call = 0; call < warmup + timed; ++call) {
      std::fill(data.begin(), data.end(), static_cast<float>(rank + 1));
      if (k3::Status s = comm.Barrier(); !s.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
        return 4;
      }
      const auto t0 = Clock::now();
      k3::Status s = comm.AllReduceSum(data);
      const auto t1 = Clock::now();
      if (!s.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
        return 4;
      }
      if (data.front() != expected || data.back() != expected) {
        std::fprintf(stderr, "rank %d: all-reduce of %zu floats gave %g, expected %g\n", rank, size.floats,
                     static_cast<double>(data.front()), static_cast<double>(expected));
        return 5;
      }
      if (call >= warmup) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    // Every rank's median, to rank 0: [world] floats (microseconds).
    const float my_median_us = static_cast<float>(Median(seconds) * 1e6);
    std::vector<float> medians_us(rank == 0 ? world : 0);
    if (k3::Status s = comm.Gather(std::span<const float>(&my_median_us, 1), medians_us, 0); !s.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
      return 4;
    }
    if (rank == 0) {
      const double bytes = static_cast<double>(size.floats) * sizeof(float);
      const double median_us = medians_us[0];
      std::sort(seconds.begin(), seconds.end());
      const double p90_us = seconds[seconds.size() * 9 / 10] * 1e6;
      const double slowest_us = *std::max_element(medians_us.begin(), medians_us.end());
      const double algbw = bytes / (median_us * 1e-6) / 1e9;
      const double busbw = algbw * 2.0 * (world - 1) / world;
      std::printf("%-14s %10.0f %6d %10.1f %10.1f %10.1f %10.3f %10.3f\n", size.label, bytes, timed,
                  median_us, p90_us, slowest_us, algbw, busbw);
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::printf("broadcast from rank 0 (an image's rows in the step plan)\n");
    std::printf("%-14s %10s %6s %10s %10s %10s\n", "size", "bytes", "calls", "median us", "p90 us", "GB/s");
  }
  for (const BroadcastSize& size : kBroadcastSizes) {
    std::vector<uint8_t> data(size.bytes);
    const int timed = std::max(3, static_cast<int>(size.timed_calls * scale));
    std::vector<double> seconds;
    for (int call = 0; call < 2 + timed; ++call) {
      const uint8_t fill = static_cast<uint8_t>(rank == 0 ? call + 1 : 0);
      std::fill(data.begin(), data.end(), fill);
      if (k3::Status s = comm.Barrier(); !s.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
        return 4;
      }
      const auto t0 = Clock::now();
      k3::Status s = comm.Broadcast(data, 0);
      const auto t1 = Clock::now();
      if (!s.ok()) {
        std::fprintf(stderr, "rank %d: %s\n", rank, s.ToString().c_str());
        return 4;
      }
      if (data.front() != static_cast<uint8_t>(call + 1) || data.back() != static_cast<uint8_t>(call + 1)) {
        std::fprintf(stderr, "rank %d: broadcast of %zu bytes arrived wrong\n", rank, size.bytes);
        return 5;
      }
      if (call >= 2) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    }
    if (rank == 0) {
      const double median = Median(seconds);
      std::sort(seconds.begin(), seconds.end());
      std::printf("%-14s %10zu %6d %10.1f %10.1f %10.3f\n", size.label, size.bytes, timed, median * 1e6,
                  seconds[seconds.size() * 9 / 10] * 1e6, static_cast<double>(size.bytes) / median / 1e9);
      std::fflush(stdout);
    }
  }
  return comm.Barrier().ok() ? 0 : 4;
}

// Starts `world` ranks of this binary and waits for them (at most 600 s; then they are killed). Returns
// true when every rank exited 0.
bool RunGroup(int world, double scale) {
  const int port = FreePort();
  if (port == 0) {
    std::fprintf(stderr, "dist_bench: no free loopback port\n");
    return false;
  }
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string scale_text = std::to_string(scale);
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("K3_DIST_BENCH_RANK", std::to_string(r).c_str(), 1);
      setenv("K3_DIST_BENCH_WORLD", std::to_string(world).c_str(), 1);
      setenv("K3_DIST_BENCH_PORT", std::to_string(port).c_str(), 1);
      execl(exe.c_str(), exe.c_str(), "--scale", scale_text.c_str(), static_cast<char*>(nullptr));
      _exit(91);
    }
    if (pid < 0) break;
    pids.push_back(pid);
  }
  bool all_ok = static_cast<int>(pids.size()) == world;
  const auto deadline = Clock::now() + std::chrono::seconds(600);
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        for (pid_t p : pids) kill(p, SIGKILL);
        waitpid(pids[r], &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "dist_bench: rank %zu of %d ended with status %d\n", r, world, status);
      all_ok = false;
    }
  }
  return all_ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> worlds = {2, 4};
  double scale = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--scale") {
      scale = std::atof(value.c_str());
    } else if (key == "--worlds") {
      worlds.clear();
      for (size_t at = 0; at < value.size();) {
        const size_t comma = value.find(',', at);
        worlds.push_back(std::atoi(value.substr(at, comma - at).c_str()));
        at = comma == std::string::npos ? value.size() : comma + 1;
      }
    }
  }
  const bool bad_world = std::any_of(worlds.begin(), worlds.end(), [](int w) { return w < 2 || w > 16; });
  if (worlds.empty() || bad_world || !(scale > 0.0 && scale <= 100.0) || argc % 2 == 0) {
    std::fprintf(stderr, "usage: dist_bench [--worlds 2,4] [--scale 1]  (worlds 2..16, scale (0, 100])\n");
    return 2;
  }
  const int rank = EnvInt("K3_DIST_BENCH_RANK");
  if (rank >= 0) return RunRank(rank, EnvInt("K3_DIST_BENCH_WORLD"), EnvInt("K3_DIST_BENCH_PORT"), scale);

  std::printf("dist_bench: load average before: %s\n", LoadAverage().c_str());
  std::fflush(stdout);
  bool all_ok = true;
  for (int world : worlds) all_ok = RunGroup(world, scale) && all_ok;
  std::printf("\nload average after: %s\n", LoadAverage().c_str());
  return all_ok ? 0 : 1;
}
