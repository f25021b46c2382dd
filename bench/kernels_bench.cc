// kernels_bench: throughput of MatMulBf16 (bf16 dot products and the fp32 path, where the CPU has the
// former) and MatMulMxfp4 on K3 shapes at decode (M = 1, 4, 16) and
// prefill-like (M = 64, 512) batch sizes, as ratios to this machine's limits measured in the same run:
// weight bytes streamed per second vs memory read bandwidth (what bounds decode), and GFLOP/s vs the
// matmul FLOP/s of a large cache-friendly MatMulBf16 (what bounds prefill).
//
// Weights are allocated in enough copies to exceed the last-level cache several times over and the
// calls cycle through them, so every call streams its weights from memory as in a real forward pass;
// they sit on 2 MiB pages, as the model's mapped weights do (src/base/huge_pages.h).
// Each figure is the median over repetitions. Two tables: wall-clock, and CPU-time per thread (the
// estimate for a loaded machine, see machine_limits.h); each is a ratio against limits measured with the
// same clock. Then the MLA decode attention of one layer over a long latent cache (RunLatentAttention):
// fp32 rows, bf16 rows one head at a time, bf16 rows in tasks of 4 heads (LatentAttentionBf16Queries: 4 per
// pass), and bf16 rows the engine's way (tasks of LatentAttentionHeadsPerTask heads, whose calls take the
// rows in key blocks), the last against the matmul and bandwidth limits. With `moe`: only one mini-k3 MoE
// layer's matmuls at decode (RunMoeOverlap), the overlap of ops.h on and off. The MXFP4 x int8 path
// (mxfp4_q8.h) is timed beside the exact MXFP4 paths at M = 1, 2, 4, 8 on expert shapes (RunMxfp4Q8);
// `q8` runs only that. Usage:
// kernels_bench [threads] [mla|moe|q8] (threads default: all cores; `mla`: only the attention figures).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/machine_limits.h"
#include "src/base/bf16.h"
#include "src/base/huge_pages.h"
#include "src/base/thread_pool.h"
#include "src/kernels/layer_ops.h"
#include "src/kernels/mxfp4_q8.h"
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
// With several variants (`paths` = 2 to 4) the calls alternate between them (run(copy, path)), so all see
// the same machine state: seconds[path][clock].
template <class Run>
void TimeCalls(size_t copies, size_t calls, size_t threads, size_t paths, const Run& run,
               double (*seconds)[2]) {
  std::vector<double> samples[4][2];
  for (size_t path = 0; path < paths; ++path) run(copies - 1, path);  // warm-up (threads, scratch growth)
  for (size_t i = 0; i < calls * paths; ++i) {
    const size_t path = i % paths;
    const double wall = Now(Clock::kWall), cpu = Now(Clock::kCpu);
    run(i % copies, path);  // every call a different copy: none finds its weights in cache
    samples[path][0].push_back(Elapsed(Clock::kWall, wall, Now(Clock::kWall), threads));
    samples[path][1].push_back(Elapsed(Clock::kCpu, cpu, Now(Clock::kCpu), threads));
  }
  for (size_t path = 0; path < paths; ++path) {
    seconds[path][0] = Median(samples[path][0]);
    seconds[path][1] = Median(samples[path][1]);
  }
}

size_t CallsFor(size_t M) { return M <= 16 ? 60 : (M <= 64 ? 20 : 5); }

// Default shape: an MLA / shared-expert projection at K3's hidden size 7168. x holds bf16 values, as the
// model's activations do, so where the CPU has bf16 dot products (ops.h) they are used; the fp32 path is
// then timed beside them, call for call, as a second row "bf16/f32".
void RunBf16(size_t M, ThreadPool& pool, std::vector<Row>& rows, size_t K = 7168, size_t N = 2048) {
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
  const bool dot_products = kernels::Bf16DotProductsActive();
  const size_t paths = dot_products ? 2 : 1;
  double seconds[2][2] = {};
  TimeCalls(
      copies, CallsFor(M), pool.num_threads(), paths,
      [&](size_t c, size_t path) {
        kernels::SetBf16DotProducts(path == 0);
        kernels::MatMulBf16(x.data(), M, K, w + c * N * K, N, y.data(), &pool);
      },
      seconds);
  kernels::SetBf16DotProducts(true);
  rows.push_back(
      Row{dot_products ? "bf16/dp" : "bf16", M, K, N, weight_bytes, {seconds[0][0], seconds[0][1]}});
  if (dot_products) rows.push_back(Row{"bf16/f32", M, K, N, weight_bytes, {seconds[1][0], seconds[1][1]}});
}

// Default shape: a routed expert's gate/up projection (spec §1.2, §3.3).
void RunMxfp4(size_t M, ThreadPool& pool, std::vector<Row>& rows, size_t K = 3584, size_t N = 3072) {
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
  const bool dot_products = kernels::Bf16DotProductsActive();
  const size_t paths = dot_products ? 2 : 1;
  double seconds[2][2] = {};
  TimeCalls(
      copies, CallsFor(M), pool.num_threads(), paths,
      [&](size_t c, size_t path) {
        kernels::SetBf16DotProducts(path == 0);
        kernels::MatMulMxfp4(x.data(), M, K, packed + c * packed_bytes, scales + c * scale_bytes, N, y.data(),
                             &pool);
      },
      seconds);
  kernels::SetBf16DotProducts(true);
  rows.push_back(
      Row{dot_products ? "mxfp4/dp" : "mxfp4", M, K, N, weight_bytes, {seconds[0][0], seconds[0][1]}});
  if (dot_products) rows.push_back(Row{"mxfp4/f32", M, K, N, weight_bytes, {seconds[1][0], seconds[1][1]}});
}

// MXFP4 x int8 ("fast" numerics, mxfp4_q8.h) beside the exact paths at expert shapes: a MatMulGroup job of
// kind kMxfp4Q8 (the group quantises x, as the model will run it), MatMulMxfp4 on bf16 dot products where
// the CPU has them, and MatMulMxfp4's fp32 path, call for call in turn. Appends the three rows; prints the
// int8 path's speed against the fp32 path (and the dot-product path) measured in this run.
void RunMxfp4Q8(size_t M, ThreadPool& pool, std::vector<Row>& rows, size_t K, size_t N) {
  const size_t packed_bytes = N * K / 2, scale_bytes = N * K / 32;
  const size_t weight_bytes = packed_bytes + scale_bytes;
  const size_t copies = kStreamBytes / weight_bytes + 1;
  HugePageBuffer packed_buffer(copies * packed_bytes), scales_buffer(copies * scale_bytes);
  uint8_t* packed = packed_buffer.data();
  uint8_t* scales = scales_buffer.data();
  for (size_t i = 0; i < copies * packed_bytes; ++i) packed[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (size_t i = 0; i < copies * scale_bytes; ++i) scales[i] = static_cast<uint8_t>(118 + i % 9);
  std::mt19937 rng(4);
  std::vector<float> x(M * K);
  for (float& v : x) v = RoundBf16(std::uniform_real_distribution<float>(-1, 1)(rng));
  std::vector<float> y(M * N);
  const bool dot_products = kernels::Bf16DotProductsActive();
  const size_t paths = dot_products ? 3 : 2;  // q8, f32[, dp]
  double seconds[3][2] = {};
  TimeCalls(
      copies, CallsFor(M), pool.num_threads(), paths,
      [&](size_t c, size_t path) {
        if (path == 0) {
          const kernels::MatMulJob job = kernels::MatMulJob::Mxfp4Q8(
              x.data(), M, K, packed + c * packed_bytes, scales + c * scale_bytes, N, y.data());
          kernels::MatMulGroup(&job, 1, &pool);
          return;
        }
        kernels::SetBf16DotProducts(path == 2);
        kernels::MatMulMxfp4(x.data(), M, K, packed + c * packed_bytes, scales + c * scale_bytes, N, y.data(),
                             &pool);
      },
      seconds);
  kernels::SetBf16DotProducts(true);
  rows.push_back(Row{"q8", M, K, N, weight_bytes, {seconds[0][0], seconds[0][1]}});
  rows.push_back(Row{"q8/f32", M, K, N, weight_bytes, {seconds[1][0], seconds[1][1]}});
  if (dot_products) rows.push_back(Row{"q8/dp", M, K, N, weight_bytes, {seconds[2][0], seconds[2][1]}});
  std::printf("q8 (%s) M=%zu K=%zu N=%zu: %.2f GB/s of weights, %.2fx the fp32 path",
              kernels::q8::KernelName(kernels::q8::ActiveKernel()), M, K, N,
              weight_bytes / seconds[0][0] / 1e9, seconds[1][0] / seconds[0][0]);
  if (dot_products) std::printf(", %.2fx the bf16 dot-product path", seconds[2][0] / seconds[0][0]);
  std::printf(" (wall clock)\n");
}

// The Q8 comparison at decode batch sizes on mini-k3's expert (1024 x 1024) and K3's (gate/up: K = 3584,
// N = 3072).
void RunMxfp4Q8Shapes(ThreadPool& pool, std::vector<Row>& rows) {
  for (size_t M : {1, 2, 4, 8}) RunMxfp4Q8(M, pool, rows, 1024, 1024);
  for (size_t M : {1, 2, 4, 8}) RunMxfp4Q8(M, pool, rows, 3584, 3072);
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

// One decode token's MLA attention in one layer at K3 size over `keys` cached tokens: H = 96 heads, each
// scoring 576-wide latent rows [c (512), k_pe (64)] and summing the 512-wide c parts, heads spread over the
// pool. The same cache in fp32 rows (LatentAttention) and in bf16 rows read in place (LatentAttentionBf16),
// alternating call for call; medians of `calls` calls.
void RunLatentAttention(size_t keys, ThreadPool& pool, size_t threads, double bandwidth_gbps,
                        double matmul_gflops) {
  constexpr size_t kHeads = 96, kWidth = 576, kCtx = 512, kHeadsPerTask = 4;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> cache32(keys * kWidth), queries(kHeads * kWidth), ctx(kHeads * kCtx);
  std::vector<bf16> cache16(keys * kWidth);
  for (float& v : cache32) v = RoundBf16(dist(rng));
  kernels::F32ToBf16(cache32.data(), cache32.size(), cache16.data());
  for (float& v : queries) v = dist(rng) * 0.05f;
  std::vector<const float*> rows32(keys);
  std::vector<const bf16*> rows16(keys);
  for (size_t j = 0; j < keys; ++j) {
    rows32[j] = cache32.data() + j * kWidth;
    rows16[j] = cache16.data() + j * kWidth;
  }
  // The engine's split (model/mla.cc): slices of heads, each one call that takes the rows in key blocks.
  const size_t heads_per_slice = kernels::LatentAttentionHeadsPerTask(kHeads, threads);
  std::vector<std::vector<float>> scores(pool.num_threads() + 1,
                                         std::vector<float>(keys * std::max(kHeadsPerTask, heads_per_slice)));
  std::vector<const float*> head_queries(kHeads);
  std::vector<float*> head_ctx(kHeads);
  for (size_t h = 0; h < kHeads; ++h) {
    head_queries[h] = queries.data() + h * kWidth;
    head_ctx[h] = ctx.data() + h * kCtx;
  }
  const float scale = 1.0f / 13.856f;
  // bf16 rows, the heads in tasks of `heads_per_call` (one LatentAttentionBf16Queries call each).
  auto run_head_tasks = [&](size_t heads_per_call) {
    pool.ParallelFor((kHeads + heads_per_call - 1) / heads_per_call, [&](size_t task, size_t worker) {
      const size_t h0 = task * heads_per_call, h1 = std::min(kHeads, h0 + heads_per_call);
      kernels::LatentAttentionBf16Queries(head_queries.data() + h0, h1 - h0, rows16.data(), keys, kWidth,
                                          kCtx, scale, scores[worker].data(), head_ctx.data() + h0);
    });
  };
  double seconds[4][2];
  TimeCalls(
      1, 15, threads, 4,
      [&](size_t, size_t path) {
        if (path >= 2) {  // tasks of 4 heads (the rows read from memory once per task), then the engine's
          run_head_tasks(path == 2 ? kHeadsPerTask : heads_per_slice);
          return;
        }
        pool.ParallelFor(kHeads, [&](size_t h, size_t worker) {
          if (path == 0) {
            kernels::LatentAttention(queries.data() + h * kWidth, rows32.data(), keys, kWidth, kCtx, scale,
                                     scores[worker].data(), ctx.data() + h * kCtx);
          } else {
            kernels::LatentAttentionBf16(queries.data() + h * kWidth, rows16.data(), keys, kWidth, kCtx,
                                         scale, scores[worker].data(), ctx.data() + h * kCtx);
          }
        });
      },
      seconds);
  // Per head and key: a dot product over the row (2 x 576 FLOP) and an axpy into the context (2 x 512).
  const double flop = 2.0 * kHeads * keys * (kWidth + kCtx);
  const double cache_bytes = keys * kWidth * 2.0;
  std::printf(
      "MLA attention, 1 layer, 96 heads, %zu cached tokens: fp32 rows %.3f ms (cache %.1f MB), bf16 rows "
      "%.3f ms (cache %.1f MB, bf16/fp32 time %.2f), bf16 rows in tasks of 4 heads %.3f ms (%.2fx one head "
      "at a time), bf16 rows in key blocks, tasks of %zu heads (the engine's) %.3f ms (%.2fx tasks of 4 "
      "heads; %.1f GFLOP/s = %.2f of the matmul limit, cache read at %.2f GB/s = %.3f of the bandwidth, "
      "counting it once) (wall clock medians)\n",
      keys, seconds[0][0] * 1e3, keys * kWidth * 4 / 1e6, seconds[1][0] * 1e3, cache_bytes / 1e6,
      seconds[1][0] / seconds[0][0], seconds[2][0] * 1e3, seconds[1][0] / seconds[2][0], heads_per_slice,
      seconds[3][0] * 1e3, seconds[2][0] / seconds[3][0], flop / seconds[3][0] / 1e9,
      flop / seconds[3][0] / 1e9 / matmul_gflops, cache_bytes / seconds[3][0] / 1e9,
      cache_bytes / seconds[3][0] / 1e9 / bandwidth_gbps);
}

// One mini-k3 MoE layer's matmuls for one decode token (bench/decode's model: 8 routed experts of
// 1024 x 1024 MXFP4 in the latent space, 2 shared experts of width 1024 on the 2048-wide hidden state, bf16):
// the experts' gate and up beside the shared experts' gate and up (one MatMulGroup), then the downs beside
// the shared down (another). Four variants alternate call for call, each call on another copy of the
// weights: the overlap of ops.h on, off (tasks in job order), the MXFP4 jobs alone and the bf16 jobs alone.
void RunMoeOverlap(ThreadPool& pool, size_t threads, double bandwidth_gbps) {
  constexpr size_t kExperts = 8, kLatent = 1024, kWidth = 1024, kHidden = 2048, kShared = 2048;
  constexpr size_t kExpertPacked = kWidth * kLatent / 2, kExpertScales = kWidth * kLatent / 32;
  constexpr size_t kExpertMatrices = 3 * kExperts;  // gate, up, down
  constexpr size_t kSharedElements = 3 * kShared * kHidden;
  constexpr size_t kLayerBytes =
      kExpertMatrices * (kExpertPacked + kExpertScales) + kSharedElements * sizeof(bf16);
  const size_t copies = kStreamBytes / kLayerBytes + 1;
  HugePageBuffer packed_buffer(copies * kExpertMatrices * kExpertPacked);
  HugePageBuffer scales_buffer(copies * kExpertMatrices * kExpertScales);
  HugePageBuffer shared_buffer(copies * kSharedElements * sizeof(bf16));
  uint8_t* packed = packed_buffer.data();
  uint8_t* scales = scales_buffer.data();
  bf16* shared = shared_buffer.as<bf16>();
  for (size_t i = 0; i < copies * kExpertMatrices * kExpertPacked; ++i)
    packed[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (size_t i = 0; i < copies * kExpertMatrices * kExpertScales; ++i)
    scales[i] = static_cast<uint8_t>(118 + i % 9);
  for (size_t i = 0; i < copies * kSharedElements; ++i)
    shared[i].bits = static_cast<uint16_t>(0x3C00 + (i * 2654435761u >> 20) % 512);
  std::mt19937 rng(5);
  auto bf16_values = [&](size_t n) {
    std::vector<float> v(n);
    for (float& f : v) f = RoundBf16(std::uniform_real_distribution<float>(-1, 1)(rng));
    return v;
  };
  const std::vector<float> z = bf16_values(kLatent), x = bf16_values(kHidden);
  const std::vector<float> act = bf16_values(kWidth), shared_act = bf16_values(kShared);
  std::vector<float> gate_up(2 * kExperts * kWidth), down(kExperts * kLatent), shared_gate_up(2 * kShared),
      shared_down(kHidden);
  double seconds[4][2];
  TimeCalls(
      copies, 60, threads, 4,
      [&](size_t c, size_t path) {
        const uint8_t* p = packed + c * kExpertMatrices * kExpertPacked;
        const uint8_t* sc = scales + c * kExpertMatrices * kExpertScales;
        const bf16* w = shared + c * kSharedElements;
        std::vector<kernels::MatMulJob> first, second;
        if (path != 3) {
          for (size_t e = 0; e < kExperts; ++e) {
            for (size_t m = 0; m < 2; ++m) {  // gate, up
              const size_t i = 2 * e + m;
              first.push_back(kernels::MatMulJob::Mxfp4(z.data(), 1, kLatent, p + i * kExpertPacked,
                                                        sc + i * kExpertScales, kWidth,
                                                        gate_up.data() + i * kWidth));
            }
            const size_t i = 2 * kExperts + e;
            second.push_back(kernels::MatMulJob::Mxfp4(act.data(), 1, kWidth, p + i * kExpertPacked,
                                                       sc + i * kExpertScales, kLatent,
                                                       down.data() + e * kLatent));
          }
        }
        if (path != 2) {
          for (size_t m = 0; m < 2; ++m) {
            first.push_back(kernels::MatMulJob::Bf16(x.data(), 1, kHidden, w + m * kShared * kHidden, kShared,
                                                     shared_gate_up.data() + m * kShared));
          }
          second.push_back(kernels::MatMulJob::Bf16(shared_act.data(), 1, kShared, w + 2 * kShared * kHidden,
                                                    kHidden, shared_down.data()));
        }
        kernels::SetMatMulOverlap(path != 1);
        kernels::MatMulGroup(first.data(), first.size(), &pool);
        kernels::MatMulGroup(second.data(), second.size(), &pool);
        kernels::SetMatMulOverlap(true);
      },
      seconds);
  const double mxfp4_bytes = kExpertMatrices * (kExpertPacked + kExpertScales);
  const double bf16_bytes = kSharedElements * sizeof(bf16);
  std::printf(
      "mini-k3 MoE layer at decode (8 experts MXFP4 %.1f MB + shared experts bf16 %.1f MB), wall clock "
      "medians: overlap on %.3f ms (%.2f GB/s = %.2f of the bandwidth), off %.3f ms (%.2f); on / off time "
      "%.3f; MXFP4 jobs alone %.3f ms, bf16 jobs alone %.3f ms (their sum %.3f, the larger %.3f)\n",
      mxfp4_bytes / 1e6, bf16_bytes / 1e6, seconds[0][0] * 1e3, kLayerBytes / seconds[0][0] / 1e9,
      kLayerBytes / seconds[0][0] / 1e9 / bandwidth_gbps, seconds[1][0] * 1e3,
      kLayerBytes / seconds[1][0] / 1e9 / bandwidth_gbps, seconds[0][0] / seconds[1][0], seconds[2][0] * 1e3,
      seconds[3][0] * 1e3, (seconds[2][0] + seconds[3][0]) * 1e3,
      std::max(seconds[2][0], seconds[3][0]) * 1e3);
}

int Main(int argc, char** argv) {
  size_t threads = std::thread::hardware_concurrency();
  if (argc > 1) threads = std::strtoul(argv[1], nullptr, 10);
  ThreadPool pool(threads);
  threads = pool.num_threads();
  if (argc > 2 && std::string(argv[2]) == "moe") {
    std::printf("kernel target: %s, threads: %zu\n", kernels::KernelTargetName(), threads);
    const double bandwidth = MeasureMemoryReadBandwidth(kBandwidthBytes, threads, 7, Clock::kWall);
    std::printf("read bandwidth %.2f GB/s (wall clock)\n", bandwidth);
    for (int round = 0; round < 3; ++round) RunMoeOverlap(pool, threads, bandwidth);
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "q8") {
    std::printf("kernel target: %s, q8 kernel: %s, bf16 dot products: %s, threads: %zu\n",
                kernels::KernelTargetName(), kernels::q8::KernelName(kernels::q8::ActiveKernel()),
                kernels::Bf16DotProductsActive() ? "yes" : "no", threads);
    const double bandwidth = MeasureMemoryReadBandwidth(kBandwidthBytes, threads, 7, Clock::kWall);
    std::vector<Row> rows;
    RunMxfp4Q8Shapes(pool, rows);
    PrintTable("wall clock", rows, 0, bandwidth, MeasureMatMulFlops(threads, 5, Clock::kWall));
    return 0;
  }
  if (argc > 2 && std::string(argv[2]) == "mla") {
    std::printf("kernel target: %s, threads: %zu\n", kernels::KernelTargetName(), threads);
    const double bandwidth = MeasureMemoryReadBandwidth(kBandwidthBytes, threads, 7, Clock::kWall);
    const double flops = MeasureMatMulFlops(threads, 5, Clock::kWall);
    std::printf("read bandwidth %.2f GB/s, matmul limit %.2f GFLOP/s (wall clock)\n", bandwidth, flops);
    for (size_t keys : {1024, 8192, 32768}) RunLatentAttention(keys, pool, threads, bandwidth, flops);
    return 0;
  }
  std::printf("kernel target: %s, bf16 dot products (AVX512_BF16): %s, threads: %zu\n",
              kernels::KernelTargetName(), kernels::Bf16DotProductsActive() ? "yes" : "no", threads);
  const double bandwidth[2] = {MeasureMemoryReadBandwidth(kBandwidthBytes, threads, 7, Clock::kWall),
                               MeasureMemoryReadBandwidth(kBandwidthBytes, threads, 7, Clock::kCpu)};
  const double flops[2] = {MeasureMatMulFlops(threads, 5, Clock::kWall),
                           MeasureMatMulFlops(threads, 5, Clock::kCpu)};
  std::vector<Row> rows;
  for (size_t M : {1, 4, 16, 64, 512}) RunBf16(M, pool, rows);
  for (size_t M : {1, 4, 16, 64, 512}) RunMxfp4(M, pool, rows);
  // Decode-sized calls of mini-k3 (bench/decode): a 2048 x 2048 projection, a 1024 x 1024 expert.
  RunBf16(1, pool, rows, 2048, 2048);
  RunMxfp4(1, pool, rows, 1024, 1024);
  RunMxfp4Q8Shapes(pool, rows);
  PrintTable("wall clock", rows, 0, bandwidth[0], flops[0]);
  PrintTable("CPU time per thread", rows, 1, bandwidth[1], flops[1]);
  std::printf("\n");
  for (size_t keys : {1024, 8192, 32768}) RunLatentAttention(keys, pool, threads, bandwidth[0], flops[0]);
  std::printf(
      "\nGB/s counts weight bytes (bf16: 2 per element; mxfp4: packed + scales) once per call. /dp: bf16 dot "
      "products; /f32: the fp32 path, timed call for call beside it. q8: MXFP4 x int8 (x quantised in the "
      "call), with q8/f32 and q8/dp the exact MXFP4 paths timed beside it. Limits: 1 GiB streaming read; "
      "MatMulBf16 M=512 K=N=2048 (dot products where the CPU has them). All figures are medians.\n");
  return 0;
}

}  // namespace
}  // namespace k3::bench

int main(int argc, char** argv) { return k3::bench::Main(argc, argv); }
