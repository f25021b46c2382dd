// Measures this machine's limits inside the running benchmark, so that kernel and decode benchmarks
// can print ratios (achieved / limit) that mean the same on a laptop and on a 2-core CI VM:
//   - memory read bandwidth, the limit of decode-like GEMV (weights streamed once),
//   - matmul FLOP/s of our own MatMulBf16 at a large, cache-friendly shape, the practical limit of
//     prefill-like GEMM on this build.
// Both are medians over repetitions (machines are noisy, other processes share the cores).
//
// Every measurement can use one of two clocks. kWall is the honest one on a quiet machine. On a loaded
// one (CI, a dev box where others compile) the threads get a fraction of the cores, so kCpu divides the
// process CPU time by the thread count instead: an estimate of the time the call would take with the
// cores to itself. Spin-waiting in the pool counts as CPU time, so kCpu errs on the slow side.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace k3::bench {

enum class Clock { kWall, kCpu };

// Seconds on `clock` now (kCpu: the process's CPU time, all threads).
double Now(Clock clock);
// Seconds a call took given start/end readings of `clock` and the number of threads it ran on.
double Elapsed(Clock clock, double start, double end, size_t threads);

// Median of `samples` (copied, so the caller's order is kept). 0 for an empty list.
double Median(std::vector<double> samples);

// The first line of /proc/loadavg ("1-min 5-min 15-min running/total last-pid"), or "?": printed before
// and after a benchmark, since the machines running them are often shared.
std::string LoadAverage();

// Streaming read bandwidth in GB/s (1e9 bytes/s): `threads` threads (a ThreadPool of that size) read
// disjoint slices of a `bytes`-sized buffer, which should be much larger than the last-level cache
// (e.g. 1 GiB). Median of `repetitions` full passes.
double MeasureMemoryReadBandwidth(size_t bytes, size_t threads, int repetitions = 7,
                                  Clock clock = Clock::kWall);

// GFLOP/s (2*M*N*K / s) of MatMulBf16 with M = 512, K = N = 2048 on `threads` threads; median of
// `repetitions` calls after a warm-up.
double MeasureMatMulFlops(size_t threads, int repetitions = 5, Clock clock = Clock::kWall);

}  // namespace k3::bench
