// kernels_bench: throughput of MatMulBf16 and MatMulMxfp4 on K3 shapes at decode (M = 1, 4, 16) and
// prefill-like (M = 64, 512) batch sizes, as ratios to this machine's limits measured in the same run:
// weight bytes streamed per second vs memory read bandwidth (what bounds decode), and GFLOP/s vs the
// matmul FLOP/s of a large cache-friendly MatMulBf16 (what bounds prefill).
//
// Weights are allocated in enough copies to exceed the last-level cache several times over and the
// calls cycle through them, so every call streams its weights from memory as in a real forward pass;
// they sit on 2 MiB pages, as the model's mapped weights do (src/base/huge_pages.h).
// Each figure is the median over repetitions. Two tables: wall-clock, and CPU-time per thread (the
// estimate for a loaded machine, see machine_limits.h); each is a ratio against limits measured with the
// same clock. Usage: kernels_bench [threads] (default: all cores).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "bench/machine_limits.h"
#include "src/base/bf16.h"
#include "src/base/huge_pages.h"
#include "src/base/thread_pool.h"
#include "src/kernels/ops.h"

namespace k3::bench {
namespace {

constexpr size_t kStreamBytes = size_t{512} << 20;  // weights in rotation: well past any LLC
constexpr size_t kBandwidthBytes = size_t{1} << 30;

struct Row {
  const char* kernel;
  size_t M, K, N, weight_bytes;
  double seconds[2];  // median per call: [wall, cpu]
};

// Calls run(copy) `calls` times over `copies` weight copies; the median seconds per call on each clock.
template <class Run>
void TimeCalls(size_t copies, size_t calls, size_t threads, const Run& run, double (&seconds)[2]) {
  std::vector<double> samples[2];
  run(copies - 1);  // warm-up (thread start-up, scratch growth)
  for (size_t i = 0; i < calls; ++i) {
    const double wall = Now(Clock::kWall), cpu = Now(Clock::kCpu);
    run(i % copies);
    samples[0].push_back(Elapsed(Clock::kWall, wall, Now(Clock::kWall), threads));
    samples[1].push_back(Elapsed(Clock::kCpu, cpu, Now(Clock::kCpu), threads));
  }
  seconds[0] = Median(samples[0]);
  seconds[1] = Median(samples[1]);
}

size_t CallsFor(size_t M) { return M <= 16 ? 60 : (M <= 64 ? 20 : 5); }

// Default shape: an MLA / shared-expert projection at K3's hidden size 7168.
Row RunBf16(size_t M, ThreadPool& pool, size_t K = 7168, size_t N = 2048) {
  const size_t weight_bytes = N * K * sizeof(bf16);
  const size_t copies = kStreamBytes / weight_bytes + 1;
  HugePageBuffer weights(copies * N * K * sizeof(bf16));
  bf16* w = weights.as<bf16>();
  for (size_t i = 0; i < copies * N * K; ++i)
    w[i].bits = static_cast<uint16_t>(0x3C00 + (i * 2654435761u >> 20) % 512);
  std::mt19937 rng(2);
  std::vector<float> x(M * K);
  for (float& v : x) v = RoundBf16(std::uniform_real_distribution<float>(-1, 1)(rng));
  std::vector<float> y(M * N);
  Row row{"bf16", M, K, N, weight_bytes, {}};
  TimeCalls(
      copies, CallsFor(M), pool.num_threads(),
      [&](size_t c) { kernels::MatMulBf16(x.data(), M, K, w + c * N * K, N, y.data(), &pool); }, row.seconds);
  return row;
}

// Default shape: a routed expert's gate/up projection (spec §1.2, §3.3).
Row RunMxfp4(size_t M, ThreadPool& pool, size_t K = 3584, size_t N = 3072) {
  const size_t packed_bytes = N * K / 2, scale_bytes = N * K / 32;
  const size_t weight_bytes = packed_bytes + scale_bytes;
  const size_t copies = kStreamBytes / weight_bytes + 1;
  HugePageBuffer packed_buffer(copies * packed_bytes), scales_buffer(copies * scale_bytes);
  uint8_t* packed = packed_buffer.data();
  uint8_t* scales = scales_buffer.data();
  for (size_t i = 0; i < copies * packed_bytes; ++i) packed[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (size_t i = 0; i < copies * scale_bytes; ++i) scales[i] = static_cast<uint8_t>(118 + i % 9);
  std::mt19937 rng(3);
  std::vector<float> x(M * K);
  for (float& v : x) v = RoundBf16(std::uniform_real_distribution<float>(-1, 1)(rng));
  std::vector<float> y(M * N);
  Row row{"mxfp4", M, K, N, weight_bytes, {}};
  TimeCalls(
      copies, CallsFor(M), pool.num_threads(),
      [&](size_t c) {
        kernels::MatMulMxfp4(x.data(), M, K, packed + c * packed_bytes, scales + c * scale_bytes, N, y.data(),
                             &pool);
      },
      row.seconds);
  return row;
}

void PrintTable(const char* title, const std::vector<Row>& rows, int clock, double bandwidth_gbps,
                double matmul_gflops) {
  std::printf("\n%s: read bandwidth %.2f GB/s, matmul limit %.2f GFLOP/s\n", title, bandwidth_gbps,
              matmul_gflops);
  std::printf("%-7s %4s %5s %5s %9s %8s %8s %9s %8s\n", "kernel", "M", "K", "N", "ms", "GB/s", "/bw",
              "GFLOP/s", "/matmul");
  for (const Row& r : rows) {
    const double seconds = r.seconds[clock];
    const double gbps = r.weight_bytes / seconds / 1e9;
    const double gflops = 2.0 * r.M * r.N * r.K / seconds / 1e9;
    std::printf("%-7s %4zu %5zu %5zu %9.3f %8.2f %8.2f %9.2f %8.2f\n", r.kernel, r.M, r.K, r.N, seconds * 1e3,
                gbps, gbps / bandwidth_gbps, gflops, gflops / matmul_gflops);
  }
}

int Main(int argc, char** argv) {
  size_t threads = std::thread::hardware_concurrency();
  if (argc > 1) threads = std::strtoul(argv[1], nullptr, 10);
  ThreadPool pool(threads);
  threads = pool.num_threads();
  std::printf("kernel target: %s, threads: %zu\n", kernels::KernelTargetName(), threads);
  const double bandwidth[2] = {MeasureMemoryReadBandwidth(kBandwidthBytes, threads, 7, Clock::kWall),
                               MeasureMemoryReadBandwidth(kBandwidthBytes, threads, 7, Clock::kCpu)};
  const double flops[2] = {MeasureMatMulFlops(threads, 5, Clock::kWall),
                           MeasureMatMulFlops(threads, 5, Clock::kCpu)};
  std::vector<Row> rows;
  for (size_t M : {1, 4, 16, 64, 512}) rows.push_back(RunBf16(M, pool));
  for (size_t M : {1, 4, 16, 64, 512}) rows.push_back(RunMxfp4(M, pool));
  // Decode-sized calls of mini-k3 (bench/decode): a 2048 x 2048 projection, a 1024 x 1024 expert.
  rows.push_back(RunBf16(1, pool, 2048, 2048));
  rows.push_back(RunMxfp4(1, pool, 1024, 1024));
  PrintTable("wall clock", rows, 0, bandwidth[0], flops[0]);
  PrintTable("CPU time per thread", rows, 1, bandwidth[1], flops[1]);
  std::printf(
      "\nGB/s counts weight bytes (bf16: 2 per element; mxfp4: packed + scales) once per call. Limits: 1 GiB "
      "streaming read; MatMulBf16 M=512 K=N=2048. All figures are medians.\n");
  return 0;
}

}  // namespace
}  // namespace k3::bench

int main(int argc, char** argv) { return k3::bench::Main(argc, argv); }
