// kernels_bench: throughput of MatMulBf16 and MatMulMxfp4 on K3 shapes at decode (M = 1, 4, 16) and
// prefill-like (M = 64, 512) batch sizes, as ratios to this machine's limits measured in the same run:
// weight bytes streamed per second vs memory read bandwidth (what bounds decode), and GFLOP/s vs the
// matmul FLOP/s of a large cache-friendly MatMulBf16 (what bounds prefill).
//
// Weights are allocated in enough copies to exceed the last-level cache several times over and the
// calls cycle through them, so every call streams its weights from memory as in a real forward pass.
// Each figure is the median over repetitions. Usage: kernels_bench [threads] (default: all cores).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "bench/machine_limits.h"
#include "src/base/bf16.h"
#include "src/base/thread_pool.h"
#include "src/kernels/ops.h"

namespace k3::bench {
namespace {

constexpr size_t kStreamBytes = size_t{512} << 20;  // weights in rotation: well past any LLC
constexpr size_t kBandwidthBytes = size_t{1} << 30;

// Calls run(copy) `calls` times over `copies` weight copies; returns the median seconds per call.
template <class Run>
double MedianSeconds(size_t copies, size_t calls, const Run& run) {
  std::vector<double> seconds;
  run(copies - 1);  // warm-up (thread start-up, scratch growth)
  for (size_t i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run(i % copies);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return Median(seconds);
}

size_t CallsFor(size_t M) { return M <= 16 ? 60 : (M <= 64 ? 20 : 5); }

void PrintRow(const char* kernel, size_t M, size_t K, size_t N, size_t weight_bytes, double seconds,
              double bandwidth_gbps, double matmul_gflops) {
  const double gbps = weight_bytes / seconds / 1e9;
  const double gflops = 2.0 * M * N * K / seconds / 1e9;
  std::printf("%-7s %4zu %5zu %5zu %9.3f %8.2f %10.2f %9.2f %9.2f\n", kernel, M, K, N, seconds * 1e3, gbps,
              gbps / bandwidth_gbps, gflops, gflops / matmul_gflops);
}

void RunBf16(size_t M, ThreadPool& pool, double bandwidth, double flops) {
  const size_t K = 7168, N = 2048;  // e.g. an MLA / shared-expert projection at hidden size 7168
  const size_t weight_bytes = N * K * sizeof(bf16);
  const size_t copies = kStreamBytes / weight_bytes + 1;
  std::vector<bf16> w(copies * N * K);
  for (size_t i = 0; i < w.size(); ++i)
    w[i].bits = static_cast<uint16_t>(0x3C00 + (i * 2654435761u >> 20) % 512);
  std::mt19937 rng(2);
  std::vector<float> x(M * K);
  for (float& v : x) v = RoundBf16(std::uniform_real_distribution<float>(-1, 1)(rng));
  std::vector<float> y(M * N);
  const double seconds = MedianSeconds(copies, CallsFor(M), [&](size_t c) {
    kernels::MatMulBf16(x.data(), M, K, w.data() + c * N * K, N, y.data(), &pool);
  });
  PrintRow("bf16", M, K, N, weight_bytes, seconds, bandwidth, flops);
}

void RunMxfp4(size_t M, ThreadPool& pool, double bandwidth, double flops) {
  const size_t K = 3584, N = 3072;  // a routed expert's gate/up projection (spec §1.2, §3.3)
  const size_t packed_bytes = N * K / 2, scale_bytes = N * K / 32;
  const size_t weight_bytes = packed_bytes + scale_bytes;
  const size_t copies = kStreamBytes / weight_bytes + 1;
  std::vector<uint8_t> packed(copies * packed_bytes), scales(copies * scale_bytes);
  for (size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (size_t i = 0; i < scales.size(); ++i) scales[i] = static_cast<uint8_t>(118 + i % 9);
  std::mt19937 rng(3);
  std::vector<float> x(M * K);
  for (float& v : x) v = RoundBf16(std::uniform_real_distribution<float>(-1, 1)(rng));
  std::vector<float> y(M * N);
  const double seconds = MedianSeconds(copies, CallsFor(M), [&](size_t c) {
    kernels::MatMulMxfp4(x.data(), M, K, packed.data() + c * packed_bytes, scales.data() + c * scale_bytes, N,
                         y.data(), &pool);
  });
  PrintRow("mxfp4", M, K, N, weight_bytes, seconds, bandwidth, flops);
}

int Main(int argc, char** argv) {
  size_t threads = std::thread::hardware_concurrency();
  if (argc > 1) threads = std::strtoul(argv[1], nullptr, 10);
  ThreadPool pool(threads);
  std::printf("kernel target: %s, threads: %zu\n", kernels::KernelTargetName(), pool.num_threads());
  const double bandwidth = MeasureMemoryReadBandwidth(kBandwidthBytes, threads);
  const double flops = MeasureMatMulFlops(threads);
  std::printf("memory read bandwidth: %.2f GB/s (median, 1 GiB buffer)\n", bandwidth);
  std::printf("matmul limit: %.2f GFLOP/s (MatMulBf16 M=512 K=N=2048, median)\n\n", flops);
  std::printf("%-7s %4s %5s %5s %9s %8s %10s %9s %9s\n", "kernel", "M", "K", "N", "ms", "GB/s", "GB/s/bw",
              "GFLOP/s", "/matmul");
  for (size_t M : {1, 4, 16, 64, 512}) RunBf16(M, pool, bandwidth, flops);
  for (size_t M : {1, 4, 16, 64, 512}) RunMxfp4(M, pool, bandwidth, flops);
  std::printf("\nGB/s counts weight bytes (bf16: 2 per element; mxfp4: packed + scales) once per call.\n");
  return 0;
}

}  // namespace
}  // namespace k3::bench

int main(int argc, char** argv) { return k3::bench::Main(argc, argv); }
