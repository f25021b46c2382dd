// Machine limits for benchmarks (machine_limits.h).
#include "bench/machine_limits.h"

#include <time.h>

#include <algorithm>
#include <fstream>

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "src/base/bf16.h"
#include "src/base/huge_pages.h"
#include "src/base/thread_pool.h"
#include "src/kernels/ops.h"

namespace k3::bench {
double Now(Clock clock) {
  if (clock == Clock::kWall) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Elapsed(Clock clock, double start, double end, size_t threads) {
  return clock == Clock::kWall ? end - start
                               : (end - start) / static_cast<double>(std::max<size_t>(1, threads));
}

double Median(std::vector<double> samples) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  const size_t mid = samples.size() / 2;
  return samples.size() % 2 == 1 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  return std::getline(in, line) ? line : "?";
}

double MeasureMemoryReadBandwidth(size_t bytes, size_t threads, int repetitions, Clock clock) {
  const size_t num_floats = bytes / sizeof(float);
  // On 2 MiB pages, as the model's weights are (src/base/file.cc): on a VM with shadow page tables a buffer
  // on 4 KiB pages measured anywhere from 6.5 to 36 GB/s from one pass to the next.
  HugePageBuffer buffer(num_floats * sizeof(float));
  float* floats = buffer.as<float>();
  std::fill(floats, floats + num_floats, 1.0f);  // written once so every page is backed
  ThreadPool pool(threads);
  // Several slices per thread so a thread slowed by another process does not hold up the pass.
  const size_t num_slices = 8 * pool.num_threads();
  const size_t slice = (num_floats + num_slices - 1) / num_slices;
  std::vector<float> sums(num_slices);
  std::vector<double> gbps;
  for (int rep = 0; rep < repetitions; ++rep) {
    const double start = Now(clock);
    pool.ParallelFor(num_slices, [&](size_t s, size_t) {
      const size_t begin = std::min(num_floats, s * slice);
      const size_t end = std::min(num_floats, begin + slice);
      // Dot of a slice with itself: one stream of loads (the second operand hits L1), SIMD-dispatched.
      sums[s] = kernels::Dot(floats + begin, floats + begin, end - begin);
    });
    const double seconds = Elapsed(clock, start, Now(clock), pool.num_threads());
    gbps.push_back(static_cast<double>(num_floats * sizeof(float)) / seconds / 1e9);
  }
  volatile float sink = sums[0];  // keep the reads observable
  (void)sink;
  return Median(gbps);
}

double MeasureMatMulFlops(size_t threads, int repetitions, Clock clock) {
  const size_t M = 512, K = 2048, N = 2048;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(M * K);
  for (float& v : x) v = RoundBf16(dist(rng));
  std::vector<bf16> w(N * K);
  for (bf16& v : w) v = FloatToBf16(dist(rng));
  std::vector<float> y(M * N);
  ThreadPool pool(threads);
  kernels::MatMulBf16(x.data(), M, K, w.data(), N, y.data(), &pool);  // warm-up
  std::vector<double> gflops;
  for (int rep = 0; rep < repetitions; ++rep) {
    const double start = Now(clock);
    kernels::MatMulBf16(x.data(), M, K, w.data(), N, y.data(), &pool);
    gflops.push_back(2.0 * M * N * K / Elapsed(clock, start, Now(clock), pool.num_threads()) / 1e9);
  }
  return Median(gflops);
}

}  // namespace k3::bench
