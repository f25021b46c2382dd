// Measures this machine's limits inside the running benchmark, so that kernel and decode benchmarks
// can print ratios (achieved / limit) that mean the same on a laptop and on a 2-core CI VM:
//   - memory read bandwidth, the limit of decode-like GEMV (weights streamed once),
//   - matmul FLOP/s of our own MatMulBf16 at a large, cache-friendly shape, the practical limit of
//     prefill-like GEMM on this build.
// Both are medians over repetitions (machines are noisy, other processes share the cores).
#pragma once

#include <cstddef>
#include <vector>

namespace k3::bench {

// Median of `samples` (copied, so the caller's order is kept). 0 for an empty list.
double Median(std::vector<double> samples);

// Streaming read bandwidth in GB/s (1e9 bytes/s): `threads` threads (a ThreadPool of that size) read
// disjoint slices of a `bytes`-sized buffer, which should be much larger than the last-level cache
// (e.g. 1 GiB). Median of `repetitions` full passes.
double MeasureMemoryReadBandwidth(size_t bytes, size_t threads, int repetitions = 7);

// GFLOP/s (2*M*N*K / s) of MatMulBf16 with M = 512, K = N = 2048 on `threads` threads; median of
// `repetitions` calls after a warm-up.
double MeasureMatMulFlops(size_t threads, int repetitions = 5);

}  // namespace k3::bench
